-- source: trinodb/trino core/trino-main/src/test/java/io/trino/sql/query/TestRowPatternMatching.java (testSimpleQuery)
-- adapted: the sample holds the VALUES rows
-- expect: refused at FROM
SELECT m.id, m.match, m.val, m.label
          FROM (VALUES
                   (1, 90),
                   (2, 80),
                   (3, 70),
                   (4, 80),
                   (5, 90),
                   (6, 50),
                   (7, 40),
                   (8, 60)
               ) t(id, value)
                 MATCH_RECOGNIZE (
                   ORDER BY id
                   MEASURES
                            MATCH_NUMBER() AS match,
                            RUNNING LAST(value) AS val,
                            CLASSIFIER() AS label
                   ALL ROWS PER MATCH
                   AFTER MATCH SKIP PAST LAST ROW
                   PATTERN (A B+ C+)
                   DEFINE /* A defaults to True, matches any row */
                          B AS B.value < PREV (B.value),
                          C AS C.value > PREV (C.value)
                ) AS m
