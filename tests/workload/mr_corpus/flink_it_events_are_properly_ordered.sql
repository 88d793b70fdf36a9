-- source: apache/flink flink-table/flink-table-planner/src/test/java/org/apache/flink/table/planner/runtime/batch/sql/MatchRecognizeITCase.java (testEventsAreProperlyOrdered)
-- expect: refused at ORDER BY
-- within: 1000
SELECT T.aid, T.bid, T.cid
FROM MyTable
MATCH_RECOGNIZE (
  ORDER BY ts, secondaryOrder DESC, ternaryOrder ASC
  MEASURES
    A.id AS aid,
    B.id AS bid,
    C.id AS cid
  PATTERN (A B C)
  DEFINE
    A AS name = 'a',
    B AS name = 'b',
    C AS name = 'c'
) AS T
