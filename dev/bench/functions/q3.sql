-- Words of lineitem's comments: a filter on array_contains, and the word counts summed.
select count(*) as n, sum(size(split(l_comment, ' '))) as words
from lineitem
where array_contains(split(l_comment, ' '), 'carefully')
