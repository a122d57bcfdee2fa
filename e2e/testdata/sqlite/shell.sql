-- Script for sqlite3's own shell (shell.c from the Debian source package),
-- built against the original and the rewritten libsqlite3.a. The test runs
-- it as `sqlite3 test.db < shell.sql` in a directory holding data.csv.
.print == setup
.bail off
.headers on
.mode list
.nullvalue <null>
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, grp TEXT, val REAL, created TEXT);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
INSERT INTO t(name, grp, val, created)
SELECT 'name-' || i, char(65 + i % 7), (i * 7919) % 1000 / 10.0, date('2020-01-01', '+' || (i % 400) || ' days') FROM n;
CREATE INDEX t_grp ON t(grp, val);
.import --csv data.csv imported
.tables
.indexes t
.schema t
.print == aggregates (list)
SELECT grp, count(*), round(avg(val), 3), min(created), max(created) FROM t GROUP BY grp ORDER BY grp;
.print == imported csv (column)
.mode column
SELECT * FROM imported ORDER BY CAST(id AS INT) LIMIT 8;
SELECT count(*) AS rows, sum(CAST(amount AS REAL)) AS total FROM imported;
.print == box
.mode box
SELECT grp, count(*) AS n, group_concat(id, ',') AS first_ids FROM (SELECT grp, id FROM t WHERE id <= 21 ORDER BY id) GROUP BY grp;
.print == markdown
.mode markdown
SELECT id, name, val FROM t WHERE val > 99.5 ORDER BY id LIMIT 5;
.print == json
.mode json
SELECT id, name, grp, val, NULL AS nada FROM t WHERE id IN (1, 2, 3);
.print == csv
.mode csv
SELECT id, name, 'quote "me", please' AS tricky, val FROM t WHERE id % 1000 = 0;
.print == line
.mode line
SELECT count(*) AS total, sum(val) AS sum_val, total_changes() AS changes FROM t;
.print == insert
.mode insert copy
SELECT id, name, val FROM t WHERE id < 4;
.print == quote / tabs / html
.mode quote
SELECT 'it''s', x'cafe', 1.5, NULL;
.mode tabs
SELECT grp, count(*) FROM t GROUP BY grp ORDER BY grp LIMIT 3;
.mode html
SELECT id, name FROM t WHERE id = 7;
.mode list
.separator " :: "
SELECT 'sep', 'arated', 'values';
.separator "|"
.print == parameters
.parameter init
.parameter set :lo 10
.parameter set :hi 20
SELECT count(*), min(id), max(id) FROM t WHERE id BETWEEN :lo AND :hi;
.parameter list
.parameter clear
.print == transactions and errors
BEGIN;
DELETE FROM t WHERE grp = 'A';
SELECT count(*) FROM t;
ROLLBACK;
SELECT count(*) FROM t;
SELECT * FROM no_such_table;
INSERT INTO t(id, name) VALUES (1, 'duplicate');
SELECT 'still running after errors';
.print == window and cte
WITH ranked AS (SELECT grp, id, val, row_number() OVER (PARTITION BY grp ORDER BY val DESC, id) AS r FROM t)
SELECT grp, group_concat(id, ' ') FROM ranked WHERE r <= 3 GROUP BY grp ORDER BY grp;
.print == json functions
SELECT json_group_object(grp, n) FROM (SELECT grp, count(*) AS n FROM t GROUP BY grp ORDER BY grp);
.print == shell extensions (sha3, decimal, series, regexp, uint, ieee754)
SELECT hex(sha3('abc', 256));
SELECT hex(sha3_query('SELECT id, name FROM t WHERE id < 100 ORDER BY id'));
SELECT decimal_add('0.1', '0.2'), decimal_mul('1.5', '2.25'), decimal_cmp('1.10', '1.1');
SELECT sum(value) FROM generate_series(1, 1000, 3);
SELECT count(*) FROM t WHERE name REGEXP '^name-1[0-9]{2}$';
SELECT name FROM (SELECT 'a10' AS name UNION SELECT 'a9' UNION SELECT 'a100') ORDER BY name COLLATE uint;
SELECT ieee754(2.5), ieee754_mantissa(10.0), ieee754_exponent(10.0);
.print == dump
CREATE TABLE small(a, b TEXT, c BLOB);
INSERT INTO small VALUES (1, 'one', x'01'), (2.5, NULL, x''), (NULL, 'it''s', NULL);
CREATE VIEW small_v AS SELECT a, b FROM small WHERE a IS NOT NULL;
.dump small small_v
.print == dbconfig, stats off, limits
.mode list
.headers off
.limit length
.dbconfig defensive
.print == vacuum and integrity
DELETE FROM t WHERE id % 2 = 0;
VACUUM;
PRAGMA integrity_check;
SELECT count(*) FROM t;
.print == done
