-- source: trinodb/trino core/trino-main/src/test/java/io/trino/sql/query/TestRowPatternMatching.java (testPatternQuantifiers, PATTERN (B+))
-- adapted: PATTERN (A B+): an A before the repeated B, as the corpus's other quantifier tests; MATCH_RECOGNIZE over the table instead of the test's window form; its MEASURES (RUNNING LAST, CLASSIFIER) left out
-- expect: runs
-- within: 10
SELECT *
FROM t
MATCH_RECOGNIZE (
  ORDER BY id
  AFTER MATCH SKIP PAST LAST ROW
  PATTERN (A B+)
  DEFINE B AS B.value <= PREV (B.value)
)
