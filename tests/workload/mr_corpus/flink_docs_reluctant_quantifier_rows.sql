-- source: apache/flink docs/content/docs/dev/table/sql/queries/match_recognize.md (Greedy & Reluctant Quantifiers, the reluctant query)
-- adapted: rowtime in seconds after 10:00:00; its MEASURES (C.price AS lastPrice) left out, as cepplan's matches with a variable that may match no row carry their events only
-- expect: runs
-- within: 10
SELECT *
FROM Ticker
    MATCH_RECOGNIZE(
        PARTITION BY symbol
        ORDER BY rowtime
        ONE ROW PER MATCH
        AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B*? C)
        DEFINE
            A AS A.price > 10,
            B AS B.price < 15,
            C AS C.price > 12
    )
