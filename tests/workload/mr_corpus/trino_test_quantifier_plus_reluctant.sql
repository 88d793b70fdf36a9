-- source: trinodb/trino core/trino-main/src/test/java/io/trino/sql/query/TestRowPatternMatching.java (testPatternQuantifiers, PATTERN (A B+?))
-- adapted: MATCH_RECOGNIZE over the table instead of the test's window form (WINDOW w AS (... ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING ...)); its MEASURES (RUNNING LAST, CLASSIFIER) left out
-- expect: runs
-- within: 10
-- peer matches: 1 2;3 4
SELECT *
FROM t
MATCH_RECOGNIZE (
  ORDER BY id
  AFTER MATCH SKIP PAST LAST ROW
  PATTERN (A B+?)
  DEFINE B AS B.value <= PREV (B.value)
)
