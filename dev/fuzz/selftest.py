"""Checks of the fuzzer's own generator and shrinker, without Spark (make test-fuzz runs them first).

The properties the comparison relies on: every query renders and survives its JSON round trip, also through a
case file (a saved case replays the same SQL, compared the same way), LIMIT only under an ORDER BY of every
output column, windows ordered by the unique id where their answer could depend on ties, every shrink candidate
renders, string values end on a whole character as Spark walks them, and table rows match their columns.
"""
import json
import os
import random
import re
import sys
import tempfile

import datagen
import fuzz
import grammar

checks = {"passed": 0, "failed": 0}


def check(ok, what):
    if ok:
        checks["passed"] += 1
    else:
        checks["failed"] += 1
        print("FAILED:", what)


def main():
    for avoid in (False, True):
        grammar.AVOID.clear()
        if avoid:
            grammar.AVOID.update(grammar.OPEN_BUGS)
        rng = random.Random(5)
        pools = datagen.shared_pools(rng)
        tables = [datagen.gen_table(rng, f"t{i + 1}", pools) for i in range(3)]
        for t in tables:
            check(all(len(r) == len(t["columns"]) for r in t["rows"]), f"{t['name']}: rows match columns")
            check(len({r[0] for r in t["rows"]}) == len(t["rows"]), f"{t['name']}: unique ids")
            for i, (_, typ) in enumerate(t["columns"]):
                if typ == "string":
                    vals = [bytes.fromhex(r[i]) for r in t["rows"] if r[i] is not None]
                    check(all(datagen.complete_last_char(v) == v for v in vals), f"{t['name']}: whole characters")
        for n in range(150):
            q = grammar.gen_query(random.Random(f"self/{n}"), tables)
            sql = q.sql()
            back = grammar.Query.from_json(json.loads(json.dumps(q.to_json())))
            check(back.sql() == sql, f"JSON round trip: {sql}")
            if q.limit is not None:
                check(q.order is not None and len(q.order) == len(q.select_list()), f"LIMIT on a total order: {sql}")
            for w in q.windows:
                text = w.sql()
                needs_id = not re.search(r"^(rank|dense_rank)\(\)", text) and "RANGE BETWEEN" not in text
                if needs_id:
                    check(re.search(r"ORDER BY .*\ba\.id\b", text) is not None, f"window ordered by id: {text}")
            if avoid:
                check(not re.search(r"CAST\(\w+\.c\d+_bin AS STRING\)", sql), f"--avoid-open: {sql}")
            if n % 25 == 0:  # a saved case replays the same SQL, compared the same way
                path = os.path.join(tempfile.gettempdir(), f"ember-fuzz-selftest-{os.getpid()}.json")
                fuzz.write_case(path, fuzz.Case(tables, q, {"spark.sql.ansi.enabled": "true"}).to_json())
                with open(path) as f:
                    case = fuzz.Case.from_json(json.load(f))
                check(case.sql == sql and case.ordered() == q.ordered() and case.tables == tables,
                      f"case file round trip: {sql}")
                bare = fuzz.Case(tables, None, {}, sql)
                check(bare.ordered() == q.ordered() and bare.limited() == (q.limit is not None),
                      f"ORDER BY / LIMIT read from the SQL alone: {sql}")
            for v in grammar.query_variants(q):
                check(isinstance(v.sql(), str) and v.sql() != sql, f"shrink candidate differs: {sql}")
    print(f"fuzz selftest: {checks['passed']} passed, {checks['failed']} failed")
    sys.exit(1 if checks["failed"] else 0)


if __name__ == "__main__":
    main()
