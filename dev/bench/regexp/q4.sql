-- An anchored alternation over customers' phone numbers, and regexp_instr.
select count(*) as n, sum(regexp_instr(c_address, '[0-9]')) as first_digit
from customer
where c_phone rlike '^(1[0-9]|2[0-4])-'
