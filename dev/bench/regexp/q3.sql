-- regexp_replace over lineitem's comments: every run of vowels removed, the remaining lengths summed.
select sum(length(regexp_replace(l_comment, '[aeiou]+', ''))) as consonants from lineitem
