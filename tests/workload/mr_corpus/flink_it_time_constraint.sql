-- source: apache/flink flink-table/flink-table-planner/src/test/java/org/apache/flink/table/planner/runtime/batch/sql/MatchRecognizeITCase.java (testTimeConstraint)
-- adapted: ts in seconds after 12:00
-- expect: runs
-- peer matches: 2 3 4
SELECT T.aid, T.bid, T.cid
FROM MyTable
MATCH_RECOGNIZE (
  ORDER BY ts
  MEASURES
    A.id AS aid,
    B.id AS bid,
    C.id AS cid
  PATTERN (A B C) WITHIN INTERVAL '1' MINUTE
  DEFINE
    A AS name = 'a',
    B AS name = 'b',
    C AS name = 'c'
) AS T
