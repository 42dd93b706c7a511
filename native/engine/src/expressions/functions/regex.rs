//! Spark's regular-expression functions (`rlike`, `regexp_extract`, `regexp_instr`, `regexp_replace`) over Java
//! patterns. Spark compiles the pattern with `java.util.regex.Pattern`; DataFusion's regexp functions take the
//! `regex` crate's syntax and semantics, which differ from Java's in `.` (Java excludes every line terminator),
//! `$` (Java also matches before a final line terminator), `\d \s \w` (ASCII in Java), case folding and more. So a
//! Java pattern is translated here, construct by construct, into an equivalent pattern for `fancy-regex` (a
//! backtracking engine for lookaround and backreferences, which hands every pattern without them to the `regex`
//! crate); a construct whose Java meaning is not reproduced exactly is refused, and the function falls back to
//! Spark, which also raises Spark's own error for a pattern Java rejects. Both engines pick the leftmost match
//! and, at one start, the first alternative in backtracking order, so matches and groups agree.
use std::fmt;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray, Int32Array, StringBuilder};
use arrow::datatypes::DataType;
use datafusion_common::{DataFusionError, Result};
use fancy_regex::{Regex, RegexBuilder};

use super::strings::strings;
use super::Kernel;

/// Java's line terminators (without `Pattern.UNIX_LINES`), which `.` does not match.
const DOT: &str = r"[^\n\r\x{85}\x{2028}\x{2029}]";
/// Java's `$` and `\Z` without `MULTILINE`: at the end, before a final line terminator, but not inside "\r\n".
const DOLLAR: &str = r"(?:\z|(?=\r\n\z)|(?<!\r)(?=\n\z)|(?=[\r\x{85}\x{2028}\x{2029}]\z))";
/// Backtracking steps per match before the engine gives up (an error: Java has no such limit).
const BACKTRACK_LIMIT: usize = 100_000_000;

/// A Java pattern translated, with what the callers need to know about it.
#[derive(Debug)]
pub struct JavaRegex {
    regex: Regex,
    /// A capturing group inside a repeated group: Java keeps a group's value from an earlier iteration that a
    /// later one skips, which other engines may not; refused where groups are read.
    pub groups_repeated: bool,
    /// Whether the pattern can match the empty string (Java steps one UTF-16 unit past an empty match).
    pub matches_empty: bool,
    /// Each group's name (index 0: the whole match), for `${name}` in a replacement.
    pub names: Vec<Option<String>>,
}

impl JavaRegex {
    /// Capturing groups (Java's `groupCount`).
    pub fn groups(&self) -> usize {
        self.names.len() - 1
    }

    /// `Err(reason)` for a pattern this translation does not reproduce exactly (or Java rejects).
    pub fn compile(java: &str) -> std::result::Result<Self, String> {
        let mut t = Translator::new(java);
        t.run()?;
        let regex = RegexBuilder::new(&t.out)
            .backtrack_limit(BACKTRACK_LIMIT)
            .build()
            .map_err(|e| format!("pattern '{java}': {e}"))?;
        // The skeleton drops what matches no text (anchors, lookaround, backreferences), so its minimum length
        // never exceeds the pattern's.
        let matches_empty =
            regex_syntax::parse(&t.skeleton).map_or(true, |hir| hir.properties().minimum_len() == Some(0));
        Ok(Self { regex, groups_repeated: t.groups_repeated, matches_empty, names: t.names })
    }

    /// The first match in `text` at or after byte `pos` (the text before `pos` still seen by lookbehind), as
    /// Java's `Matcher.find` continues.
    pub fn find_from(&self, text: &str, pos: usize) -> Result<Option<(usize, usize)>> {
        Ok(self.regex.find_from_pos(text, pos).map_err(|e| self.failed(e))?.map(|m| (m.start(), m.end())))
    }

    /// The first match at or after byte `pos`: its start, end and group `group` (None when it did not take part).
    pub fn group_from<'t>(
        &self,
        text: &'t str,
        pos: usize,
        group: usize,
    ) -> Result<Option<(usize, usize, Option<&'t str>)>> {
        let caps = self.regex.captures_from_pos(text, pos).map_err(|e| self.failed(e))?;
        Ok(caps.map(|c| {
            let m = c.get(0).expect("group 0");
            (m.start(), m.end(), c.get(group).map(|g| g.as_str()))
        }))
    }

    fn failed(&self, e: fancy_regex::Error) -> DataFusionError {
        DataFusionError::Execution(format!("regular expression {}: {e}", self.regex.as_str()))
    }
}

struct Translator<'a> {
    src: Vec<char>,
    java: &'a str,
    at: usize,
    out: String,
    /// `out` without the zero-width and backreference parts (for the minimum length).
    skeleton: String,
    /// Inside a lookaround (nothing of it goes to the skeleton), by depth.
    hidden: usize,
    /// Each group's name so far (index 0: the whole match); their count is the groups opened.
    names: Vec<Option<String>>,
    groups_repeated: bool,
}

/// What the last item emitted was, for the quantifier after it.
#[derive(Clone, Copy, PartialEq)]
enum Last {
    /// Nothing a quantifier may follow (start, `|`, `(`, an anchor, a lookaround).
    None,
    /// An atom: a literal, a class, `.`, a backreference.
    Atom,
    /// A group that holds a capturing group.
    CapturingGroup,
    /// A group without one.
    Group,
}

impl<'a> Translator<'a> {
    fn new(java: &'a str) -> Self {
        Self {
            src: java.chars().collect(),
            java,
            at: 0,
            out: String::with_capacity(java.len() * 2),
            skeleton: String::new(),
            hidden: 0,
            names: vec![None],
            groups_repeated: false,
        }
    }

    /// Emits `s` to the pattern and, outside lookarounds, to the skeleton.
    fn emit(&mut self, s: &str) {
        self.out.push_str(s);
        if self.hidden == 0 {
            self.skeleton.push_str(s);
        }
    }

    /// Emits a zero-width or backreference construct: `s` to the pattern, `skeleton` to the skeleton.
    fn emit_fancy(&mut self, s: &str, skeleton: &str) {
        self.out.push_str(s);
        if self.hidden == 0 {
            self.skeleton.push_str(skeleton);
        }
    }

    fn refuse<T>(&self, what: &str) -> std::result::Result<T, String> {
        Err(format!("the Java pattern '{}' uses {what}, which is not translated natively", self.java))
    }

    fn peek(&self) -> Option<char> {
        self.src.get(self.at).copied()
    }

    /// Translates the whole pattern into `out` (and `skeleton`).
    fn run(&mut self) -> std::result::Result<(), String> {
        // Per open group: (captures or holds a capture, is a lookaround).
        let mut open: Vec<(bool, bool)> = Vec::new();
        let mut last = Last::None;
        while let Some(c) = self.peek() {
            self.at += 1;
            match c {
                '\\' => last = self.escape()?,
                '.' => {
                    self.emit(DOT);
                    last = Last::Atom;
                }
                '^' => {
                    self.emit_fancy("^", "");
                    last = Last::None;
                }
                '$' => {
                    self.emit_fancy(DOLLAR, "");
                    last = Last::None;
                }
                '|' => {
                    self.emit("|");
                    last = Last::None;
                }
                '[' => {
                    self.class()?;
                    last = Last::Atom;
                }
                '(' => {
                    open.push(self.group_open()?);
                    last = Last::None;
                }
                ')' => {
                    let Some((captures, lookaround)) = open.pop() else {
                        return self.refuse("an unmatched ')'");
                    };
                    self.emit(")");
                    if lookaround {
                        self.hidden -= 1;
                    }
                    if let Some(parent) = open.last_mut() {
                        parent.0 |= captures;
                    }
                    last = if lookaround {
                        Last::None
                    } else if captures {
                        Last::CapturingGroup
                    } else {
                        Last::Group
                    };
                }
                '*' | '+' | '?' | '{' => {
                    if last == Last::None {
                        return self.refuse("a quantifier without an atom before it");
                    }
                    // Whether the quantifier repeats (more than once), where Java keeps a group's earlier value.
                    let repeats = if c == '{' {
                        self.counted()?
                    } else {
                        self.emit(c.encode_utf8(&mut [0u8; 4]));
                        c != '?'
                    };
                    match self.peek() {
                        Some('?') => {
                            self.at += 1;
                            self.emit("?");
                        }
                        Some('+') => return self.refuse("a possessive quantifier"),
                        _ => {}
                    }
                    if last == Last::CapturingGroup && repeats {
                        self.groups_repeated = true;
                    }
                    last = Last::None;
                }
                _ => {
                    self.literal(c);
                    last = Last::Atom;
                }
            }
        }
        if !open.is_empty() {
            return self.refuse("an unclosed group");
        }
        Ok(())
    }

    fn literal(&mut self, c: char) {
        let mut buf = [0u8; 4];
        let escaped = fancy_regex::escape(c.encode_utf8(&mut buf)).into_owned();
        self.emit(&escaped);
    }

    /// After '(': returns (captures, is a lookaround).
    fn group_open(&mut self) -> std::result::Result<(bool, bool), String> {
        if self.peek() != Some('?') {
            self.names.push(None);
            self.emit("(");
            return Ok((true, false));
        }
        self.at += 1;
        let next = self.peek();
        self.at += 1;
        match next {
            Some(':') => {
                self.emit("(?:");
                Ok((false, false))
            }
            Some('=') | Some('!') => {
                self.emit_fancy(if next == Some('=') { "(?=" } else { "(?!" }, "");
                self.hidden += 1;
                Ok((false, true))
            }
            Some('>') => {
                self.emit_fancy("(?>", "(?:");
                Ok((false, false))
            }
            Some('<') => match self.peek() {
                Some(c @ ('=' | '!')) => {
                    self.at += 1;
                    self.emit_fancy(if c == '=' { "(?<=" } else { "(?<!" }, "");
                    self.hidden += 1;
                    Ok((false, true))
                }
                Some(c) if c.is_ascii_alphabetic() => {
                    let start = self.at;
                    while self.peek().is_some_and(|c| c.is_ascii_alphanumeric()) {
                        self.at += 1;
                    }
                    if self.peek() != Some('>') {
                        return self.refuse("a malformed group name");
                    }
                    let name: String = self.src[start..self.at].iter().collect();
                    self.at += 1;
                    if self.names.iter().any(|n| n.as_deref() == Some(name.as_str())) {
                        return self.refuse("a group name used twice");
                    }
                    self.emit(&format!("(?P<{name}>"));
                    self.names.push(Some(name));
                    Ok((true, false))
                }
                _ => self.refuse("a malformed group"),
            },
            _ => self.refuse("inline flags or another special group"),
        }
    }

    /// After '{': `{n}`, `{n,}`, `{n,m}` with n <= m (small counts only); whether it can repeat more than once.
    fn counted(&mut self) -> std::result::Result<bool, String> {
        let number = |t: &mut Self| -> Option<u32> {
            let start = t.at;
            while t.peek().is_some_and(|c| c.is_ascii_digit()) {
                t.at += 1;
            }
            let s: String = t.src[start..t.at].iter().collect();
            s.parse::<u32>().ok().filter(|n| *n <= 1000)
        };
        let Some(n) = number(self) else { return self.refuse("a repetition count that is not a small number") };
        let m = match self.peek() {
            Some('}') => Some(n),
            Some(',') => {
                self.at += 1;
                if self.peek() == Some('}') {
                    None
                } else {
                    match number(self) {
                        Some(m) if m >= n => Some(m),
                        _ => return self.refuse("a malformed repetition"),
                    }
                }
            }
            _ => return self.refuse("a malformed repetition"),
        };
        if self.peek() != Some('}') {
            return self.refuse("a malformed repetition");
        }
        self.at += 1;
        let q = match m {
            Some(m) if m == n => format!("{{{n}}}"),
            Some(m) => format!("{{{n},{m}}}"),
            None => format!("{{{n},}}"),
        };
        self.emit(&q);
        Ok(m.is_none_or(|m| m > 1))
    }

    /// The character an escape names (`\t`, `\x41`, `\u00e9`, `\.`, ...), after the backslash and its letter;
    /// `None` for a letter that names no character.
    fn escaped_char(&mut self, letter: char) -> std::result::Result<Option<char>, String> {
        let hex = |t: &mut Self, n: usize| -> Option<u32> {
            let s: String = t.src.get(t.at..t.at + n)?.iter().collect();
            if !s.chars().all(|c| c.is_ascii_hexdigit()) {
                return None;
            }
            t.at += n;
            u32::from_str_radix(&s, 16).ok()
        };
        let code = match letter {
            't' => 0x09,
            'n' => 0x0A,
            'r' => 0x0D,
            'f' => 0x0C,
            'a' => 0x07,
            'e' => 0x1B,
            'x' if self.peek() == Some('{') => {
                self.at += 1;
                let start = self.at;
                while self.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                    self.at += 1;
                }
                let s: String = self.src[start..self.at].iter().collect();
                if self.peek() != Some('}') || s.is_empty() || s.len() > 6 {
                    return self.refuse("a malformed \\x{...} escape");
                }
                self.at += 1;
                u32::from_str_radix(&s, 16).map_err(|e| e.to_string())?
            }
            'x' => match hex(self, 2) {
                Some(v) => v,
                None => return self.refuse("a malformed \\x escape"),
            },
            'u' => match hex(self, 4) {
                Some(v) => v,
                None => return self.refuse("a malformed \\u escape"),
            },
            c if c.is_ascii() && !c.is_ascii_alphanumeric() => c as u32,
            _ => return Ok(None),
        };
        match char::from_u32(code) {
            Some(c) => Ok(Some(c)),
            None => self.refuse("an escape of a surrogate or of no character"),
        }
    }

    /// After '\' outside a class.
    fn escape(&mut self) -> std::result::Result<Last, String> {
        let Some(c) = self.peek() else { return self.refuse("a trailing backslash") };
        self.at += 1;
        let class = match c {
            'd' => Some("[0-9]"),
            'D' => Some("[^0-9]"),
            's' => Some(r"[\t\n\x0B\f\r ]"),
            'S' => Some(r"[^\t\n\x0B\f\r ]"),
            'w' => Some("[a-zA-Z_0-9]"),
            'W' => Some("[^a-zA-Z_0-9]"),
            _ => None,
        };
        if let Some(class) = class {
            self.emit(class);
            return Ok(Last::Atom);
        }
        match c {
            'A' => {
                self.emit_fancy(r"\A", "");
                return Ok(Last::None);
            }
            'z' => {
                self.emit_fancy(r"\z", "");
                return Ok(Last::None);
            }
            'Z' => {
                self.emit_fancy(DOLLAR, "");
                return Ok(Last::None);
            }
            'Q' => {
                // Quoted up to \E (or the end).
                while let Some(q) = self.peek() {
                    if q == '\\' && self.src.get(self.at + 1) == Some(&'E') {
                        self.at += 2;
                        return Ok(Last::Atom);
                    }
                    self.at += 1;
                    self.literal(q);
                }
                return Ok(Last::Atom);
            }
            '1'..='9' => {
                let n = c.to_digit(10).unwrap() as usize;
                if self.peek().is_some_and(|d| d.is_ascii_digit()) || n >= self.names.len() {
                    return self.refuse("a backreference other than \\1..\\9 to an earlier group");
                }
                // In the skeleton an empty group, so that a quantifier after it stays valid.
                self.emit_fancy(&format!("\\{n}"), "(?:)");
                return Ok(Last::Atom);
            }
            _ => {}
        }
        match self.escaped_char(c)? {
            Some(ch) => {
                self.literal(ch);
                Ok(Last::Atom)
            }
            None => self.refuse(&format!("the escape \\{c}")),
        }
    }

    /// After '[': a class of single characters, ranges and `\d \s \w`; no nesting, unions or intersections.
    fn class(&mut self) -> std::result::Result<(), String> {
        let mut class = String::from("[");
        if self.peek() == Some('^') {
            self.at += 1;
            class.push('^');
        }
        let mut items = 0;
        // The previous single character, for a range.
        let mut prev: Option<char> = None;
        loop {
            let Some(c) = self.peek() else { return self.refuse("an unclosed character class") };
            self.at += 1;
            match c {
                ']' if items > 0 => {
                    class.push(']');
                    self.emit(&class);
                    return Ok(());
                }
                ']' => return self.refuse("an empty character class"),
                '[' => return self.refuse("a nested character class"),
                '&' if self.peek() == Some('&') => return self.refuse("a class intersection"),
                '-' if prev.is_some() && self.peek().is_some_and(|n| n != ']') => {
                    let lo = prev.take().unwrap();
                    let Some(n) = self.peek() else { return self.refuse("an unclosed character class") };
                    self.at += 1;
                    let hi = match n {
                        '\\' => {
                            let Some(e) = self.peek() else { return self.refuse("a trailing backslash") };
                            self.at += 1;
                            match self.escaped_char(e)? {
                                Some(h) => h,
                                None => return self.refuse("a range to a class"),
                            }
                        }
                        '[' => return self.refuse("a nested character class"),
                        h => h,
                    };
                    if hi < lo {
                        return self.refuse("a reversed range");
                    }
                    class.push('-');
                    class_char(&mut class, hi);
                    items += 1;
                }
                '\\' => {
                    let Some(e) = self.peek() else { return self.refuse("a trailing backslash") };
                    self.at += 1;
                    let set = match e {
                        'd' => Some("0-9"),
                        's' => Some(r"\t\n\x0B\f\r "),
                        'w' => Some("a-zA-Z_0-9"),
                        _ => None,
                    };
                    if let Some(set) = set {
                        class.push_str(set);
                        prev = None;
                    } else {
                        match self.escaped_char(e)? {
                            Some(ch) => {
                                class_char(&mut class, ch);
                                prev = Some(ch);
                            }
                            None => return self.refuse(&format!("the escape \\{e} in a class")),
                        }
                    }
                    items += 1;
                }
                c => {
                    class_char(&mut class, c);
                    prev = Some(c);
                    items += 1;
                }
            }
        }
    }
}

/// One character inside a class, escaped where the `regex` crate's class syntax would read it otherwise.
fn class_char(class: &mut String, c: char) {
    if c.is_ascii_punctuation() {
        class.push('\\');
        class.push(c);
    } else if c.is_control() || c.is_whitespace() {
        class.push_str(&format!("\\x{{{:x}}}", c as u32));
    } else {
        class.push(c);
    }
}

impl fmt::Display for JavaRegex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.regex.as_str())
    }
}

/// `str rlike pattern` (also `regexp`, `regexp_like`): whether the pattern is found anywhere (`find`, not a full
/// match). `None`: a NULL pattern, every result NULL.
#[derive(Debug)]
pub struct RLike(pub Option<Arc<JavaRegex>>);

impl Kernel for RLike {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let s = strings(&args[0])?;
        let Some(re) = &self.0 else { return Ok(arrow::array::new_null_array(&DataType::Boolean, s.len())) };
        let out = s
            .iter()
            .map(|v| v.map(|v| re.regex.is_match(v).map_err(|e| re.failed(e))).transpose())
            .collect::<Result<BooleanArray>>()?;
        Ok(Arc::new(out))
    }
}

/// `regexp_extract(str, pattern, idx)`: group `idx` of the first match, "" when nothing matches or the group did
/// not take part. `idx` is a literal checked against the group count when planning.
#[derive(Debug)]
pub struct RegexpExtract(pub Option<Arc<JavaRegex>>, pub usize);

impl Kernel for RegexpExtract {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let s = strings(&args[0])?;
        let Some(re) = &self.0 else { return Ok(arrow::array::new_null_array(&DataType::Utf8, s.len())) };
        let mut out = StringBuilder::with_capacity(s.len(), 0);
        for v in s.iter() {
            match v {
                None => out.append_null(),
                Some(v) => match re.regex.captures(v).map_err(|e| re.failed(e))? {
                    Some(c) => out.append_value(c.get(self.1).map_or("", |m| m.as_str())),
                    None => out.append_value(""),
                },
            }
        }
        Ok(Arc::new(out.finish()))
    }
}

/// `regexp_instr(str, pattern)`: 1 + where the first match starts, in UTF-16 units (Java's `start()`), 0 when
/// nothing matches.
#[derive(Debug)]
pub struct RegexpInstr(pub Option<Arc<JavaRegex>>);

impl Kernel for RegexpInstr {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let s = strings(&args[0])?;
        let Some(re) = &self.0 else { return Ok(arrow::array::new_null_array(&DataType::Int32, s.len())) };
        let out = s
            .iter()
            .map(|v| {
                v.map(|v| {
                    let found = re.regex.find(v).map_err(|e| re.failed(e))?;
                    Ok(found.map_or(0, |m| 1 + v[..m.start()].encode_utf16().count() as i32))
                })
                .transpose()
            })
            .collect::<Result<Int32Array>>()?;
        Ok(Arc::new(out))
    }
}

/// One piece of a Java replacement string (`Matcher.appendReplacement`): text, or a group's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    Text(String),
    Group(usize),
}

/// Parses a replacement as `appendReplacement` reads it: `$n` (the longest number that names a group, at least
/// one digit), `${name}`, `\x` for a literal `x`; `Err` where Java would throw (the function then falls back, and
/// Spark raises its error).
pub fn replacement(rep: &str, names: &[Option<String>]) -> std::result::Result<Vec<Piece>, String> {
    let groups = names.len() - 1;
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut it = rep.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '\\' => match it.next() {
                Some(n) => text.push(n),
                None => return Err("a replacement ending in a backslash".into()),
            },
            '$' => {
                let group = match it.peek() {
                    Some('{') => {
                        it.next();
                        let mut name = String::new();
                        loop {
                            match it.next() {
                                Some('}') => break,
                                Some(n) if n.is_ascii_alphanumeric() => name.push(n),
                                _ => return Err("a malformed ${name} in the replacement".into()),
                            }
                        }
                        // Group names start with a letter (the translation checks), so "" or "1a" names none.
                        match names.iter().position(|n| n.as_deref() == Some(name.as_str())) {
                            Some(i) => i,
                            None => return Err(format!("no group named '{name}'")),
                        }
                    }
                    Some(d) if d.is_ascii_digit() => {
                        let mut n = d.to_digit(10).unwrap() as usize;
                        it.next();
                        if n > groups {
                            return Err(format!("no group {n}"));
                        }
                        while let Some(d) = it.peek().and_then(|d| d.to_digit(10)) {
                            let longer = n * 10 + d as usize;
                            if longer > groups {
                                break;
                            }
                            n = longer;
                            it.next();
                        }
                        n
                    }
                    _ => return Err("an illegal group reference in the replacement".into()),
                };
                if !text.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut text)));
                }
                pieces.push(Piece::Group(group));
            }
            c => text.push(c),
        }
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    Ok(pieces)
}

/// `regexp_replace(str, pattern, replacement)` from position 1: every match, left to right, replaced. Patterns
/// that can match "" are refused when planning (Java steps past an empty match by one UTF-16 unit, splitting a
/// surrogate pair).
#[derive(Debug)]
pub struct RegexpReplace {
    pub regex: Option<Arc<JavaRegex>>,
    pub pieces: Vec<Piece>,
}

impl Kernel for RegexpReplace {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let s = strings(&args[0])?;
        let Some(re) = &self.regex else { return Ok(arrow::array::new_null_array(&DataType::Utf8, s.len())) };
        let groups = self.pieces.iter().any(|p| matches!(p, Piece::Group(_)));
        let mut out = StringBuilder::with_capacity(s.len(), 0);
        let mut buf = String::new();
        for v in s.iter() {
            let Some(v) = v else {
                out.append_null();
                continue;
            };
            buf.clear();
            // Where the last match ended: the text before the next one is copied from there, and the search
            // goes on from there (no match is empty).
            let mut last = 0;
            loop {
                let (start, end, caps) = if groups {
                    match re.regex.captures_from_pos(v, last).map_err(|e| re.failed(e))? {
                        Some(c) => {
                            let m = c.get(0).expect("group 0");
                            (m.start(), m.end(), Some(c))
                        }
                        None => break,
                    }
                } else {
                    match re.find_from(v, last)? {
                        Some((start, end)) => (start, end, None),
                        None => break,
                    }
                };
                if end == start {
                    return Err(DataFusionError::Internal(format!("regexp_replace: an empty match of {re}")));
                }
                buf.push_str(&v[last..start]);
                for p in &self.pieces {
                    match p {
                        Piece::Text(t) => buf.push_str(t),
                        Piece::Group(g) => {
                            if let Some(m) = caps.as_ref().and_then(|c| c.get(*g)) {
                                buf.push_str(m.as_str());
                            }
                        }
                    }
                }
                last = end;
            }
            buf.push_str(&v[last..]);
            out.append_value(&buf);
        }
        Ok(Arc::new(out.finish()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(p: &str, s: &str) -> Option<(usize, usize)> {
        JavaRegex::compile(p).unwrap().regex.find(s).unwrap().map(|m| (m.start(), m.end()))
    }

    #[test]
    fn java_dot_dollar_and_classes() {
        assert_eq!(find("a.c", "a\nc"), None, "Java's . excludes line terminators");
        assert_eq!(find("a.c", "a\u{2028}c"), None);
        assert_eq!(find("a.c", "aéc"), Some((0, 4)));
        assert!(find("abc$", "abc\n").is_some(), "$ before a final terminator");
        assert!(find("abc$", "abc\r\n").is_some());
        assert!(find("abc$", "abc\n\n").is_none());
        assert!(find("c$", "abc\r").is_some());
        assert!(find("\\r$", "\r\n").is_none(), "$ never between \\r and \\n (Java)");
        assert!(find("\\d", "٣").is_none(), "\\d is ASCII in Java");
        assert!(find("\\w", "é").is_none());
        assert!(find("[\\w-]+", "a-b").is_some());
        assert_eq!(find("\\Qa.b\\E", "axb a.b"), Some((4, 7)));
        assert_eq!(find("(a)(?<n>b)\\1", "abb abab"), Some((4, 7)));
        assert_eq!(find("[^a-c]", "abcd"), Some((3, 4)));
        assert_eq!(find("x{2,3}?", "xxxx"), Some((0, 2)));
    }

    #[test]
    fn refused_constructs() {
        for p in [
            "(?i)a",
            "\\bword",
            "\\p{Alpha}",
            "a*+",
            "[a[b]]",
            "[a&&b]",
            "\\0",
            "(",
            ")",
            "*a",
            "\\k<n>",
            "\\R",
            "a{2",
            "[]",
            "\\1",
            "é\\é",
            "\\uD800",
        ] {
            assert!(JavaRegex::compile(p).is_err(), "{p} should be refused");
        }
    }

    #[test]
    fn replacement_as_java_reads_it() {
        use Piece::*;
        let unnamed = |groups: usize| vec![None; groups + 1];
        assert_eq!(replacement("<$1>", &unnamed(1)).unwrap(), vec![Text("<".into()), Group(1), Text(">".into())]);
        assert_eq!(replacement("$12", &unnamed(1)).unwrap(), vec![Group(1), Text("2".into())]);
        assert_eq!(replacement("$12", &unnamed(12)).unwrap(), vec![Group(12)]);
        assert_eq!(replacement("\\$x", &unnamed(0)).unwrap(), vec![Text("$x".into())]);
        assert_eq!(replacement("${n}", &[None, Some("n".into())]).unwrap(), vec![Group(1)]);
        assert!(replacement("${}", &[None, Some("n".into())]).is_err());
        assert!(replacement("$2", &unnamed(1)).is_err());
        assert!(replacement("a\\", &unnamed(0)).is_err());
        assert!(replacement("$x", &unnamed(0)).is_err());
    }
}
