-- source: apache/flink flink-table/flink-table-planner/src/test/java/org/apache/flink/table/planner/runtime/batch/sql/MatchRecognizeITCase.java (testCodeSplitsAreProperlyGenerated)
-- expect: refused at DEFINE A
-- within: 1000
SELECT *
FROM MyTable
MATCH_RECOGNIZE (
  PARTITION BY key1, key2
  ORDER BY ts
  MEASURES
    A.id AS aid,
    A.key1 AS akey1,
    LAST(B.id) AS bid,
    C.id AS cid,
    C.key2 AS ckey2
  PATTERN (A B C)
  DEFINE
    A AS name = 'a' AND key1 LIKE '%key%' AND id > 0,
    B AS name = 'b' AND LAST(A.name, 2) IS NULL,
    C AS name = 'c' AND LAST(A.name) = 'a'
) AS T
