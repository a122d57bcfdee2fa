/*
 * SQLite driver for the e2e suite: builds a database on disk (WAL and
 * rollback journals), inserts thousands of rows through prepared statements
 * and transactions, and prints the results of indexes, joins, aggregates,
 * window functions, CTEs, triggers, views, FTS, JSON and R-tree queries.
 * Built against the original and the rewritten libsqlite3.a; outputs must
 * match.
 *
 *   driver DBFILE
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>

static sqlite3 *db;
static int failures;

static void die(const char *what)
{
	printf("FATAL %s: %s\n", what, sqlite3_errmsg(db));
	exit(2);
}

static void exec(const char *sql)
{
	char *err = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
		printf("ERROR in exec: %s\n  sql: %.200s\n", err, sql);
		sqlite3_free(err);
		failures++;
	}
}

/* prints every row of a query, values separated by '|'; an error counts as
 * a failure unless expect_error */
static void query_x(const char *title, const char *sql, int expect_error);
static void query(const char *title, const char *sql)
{
	query_x(title, sql, 0);
}

static void query_x(const char *title, const char *sql, int expect_error)
{
	sqlite3_stmt *st;
	printf("-- %s\n", title);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		printf("ERROR preparing: %s\n", sqlite3_errmsg(db));
		failures += !expect_error;
		return;
	}
	int rows = 0, rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int n = sqlite3_column_count(st);
		for (int i = 0; i < n; i++) {
			if (i)
				putchar('|');
			switch (sqlite3_column_type(st, i)) {
			case SQLITE_NULL:
				fputs("NULL", stdout);
				break;
			case SQLITE_INTEGER:
				printf("%lld", (long long)sqlite3_column_int64(st, i));
				break;
			case SQLITE_FLOAT:
				printf("%.6f", sqlite3_column_double(st, i));
				break;
			case SQLITE_BLOB:
				printf("blob[%d]", sqlite3_column_bytes(st, i));
				break;
			default:
				fputs((const char *)sqlite3_column_text(st, i), stdout);
			}
		}
		putchar('\n');
		rows++;
	}
	if (rc != SQLITE_DONE) {
		printf("ERROR stepping: %s\n", sqlite3_errmsg(db));
		failures += !expect_error;
	}
	sqlite3_finalize(st);
	printf("(%d rows)\n", rows);
}

static unsigned long long rng = 0x9E3779B97F4A7C15ULL;
static unsigned rnd(unsigned n)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (unsigned)((rng >> 33) % n);
}

static const char *first[] = {"Ada", "Alan", "Grace", "Edsger", "Barbara", "Donald", "Frances", "Ken",
			      "Dennis", "Margaret", "John", "Radia", "Leslie", "Niklaus", "Tony", "Sophie"};
static const char *last[] = {"Lovelace", "Turing", "Hopper", "Dijkstra", "Liskov", "Knuth", "Allen", "Thompson",
			     "Ritchie", "Hamilton", "Backus", "Perlman", "Lamport", "Wirth", "Hoare", "Wilson"};
static const char *cities[] = {"Oslo", "Lima", "Kyoto", "Quito", "Perth", "Cairo", "Porto", "Turin"};
static const char *lorem[] = {"page", "memory", "thread", "access", "trace", "cache", "tier", "hot", "cold",
			      "numa", "node", "buffer", "sample", "working", "set", "dirty", "checkpoint", "lock"};

/* a scalar function defined in C */
static void fn_rot13(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	(void)argc;
	const unsigned char *s = sqlite3_value_text(argv[0]);
	if (!s) {
		sqlite3_result_null(ctx);
		return;
	}
	size_t n = strlen((const char *)s);
	char *out = sqlite3_malloc64(n + 1);
	for (size_t i = 0; i <= n; i++) {
		unsigned char c = s[i];
		if (c >= 'a' && c <= 'z')
			c = (unsigned char)('a' + (c - 'a' + 13) % 26);
		else if (c >= 'A' && c <= 'Z')
			c = (unsigned char)('A' + (c - 'A' + 13) % 26);
		out[i] = (char)c;
	}
	sqlite3_result_text(ctx, out, (int)n, sqlite3_free);
}

/* an aggregate defined in C: geometric-ish checksum */
struct agg {
	unsigned long long h;
	long long n;
};
static void agg_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	(void)argc;
	struct agg *a = sqlite3_aggregate_context(ctx, sizeof *a);
	if (!a)
		return;
	if (a->n == 0)
		a->h = 1469598103934665603ULL;
	const unsigned char *s = sqlite3_value_text(argv[0]);
	for (; s && *s; s++)
		a->h = (a->h ^ *s) * 1099511628211ULL;
	a->n++;
}
static void agg_final(sqlite3_context *ctx)
{
	struct agg *a = sqlite3_aggregate_context(ctx, 0);
	char buf[64];
	snprintf(buf, sizeof buf, "%016llx/%lld", a ? a->h : 0ULL, a ? a->n : 0LL);
	sqlite3_result_text(ctx, buf, -1, SQLITE_TRANSIENT);
}

static int collate_len(void *arg, int n1, const void *s1, int n2, const void *s2)
{
	(void)arg;
	if (n1 != n2)
		return n1 - n2;
	return memcmp(s1, s2, (size_t)n1);
}

static void populate(void)
{
	exec("BEGIN");
	sqlite3_stmt *ins;
	if (sqlite3_prepare_v2(db, "INSERT INTO people(name, city, born, salary, note) VALUES(?,?,?,?,?)", -1, &ins,
			       NULL) != SQLITE_OK)
		die("prepare people");
	for (int i = 0; i < 5000; i++) {
		char name[64], note[128];
		snprintf(name, sizeof name, "%s %s %d", first[rnd(16)], last[rnd(16)], i);
		snprintf(note, sizeof note, "%s %s %s", lorem[rnd(18)], lorem[rnd(18)], lorem[rnd(18)]);
		sqlite3_bind_text(ins, 1, name, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(ins, 2, cities[rnd(8)], -1, SQLITE_STATIC);
		sqlite3_bind_int(ins, 3, 1900 + (int)rnd(120));
		if (rnd(10) == 0)
			sqlite3_bind_null(ins, 4);
		else
			sqlite3_bind_double(ins, 4, 1000.0 + rnd(900000) / 10.0);
		sqlite3_bind_text(ins, 5, note, -1, SQLITE_TRANSIENT);
		if (sqlite3_step(ins) != SQLITE_DONE)
			die("insert people");
		sqlite3_reset(ins);
	}
	sqlite3_finalize(ins);
	exec("COMMIT");

	exec("BEGIN");
	if (sqlite3_prepare_v2(db, "INSERT INTO orders(person, item, qty, price, day) VALUES(?,?,?,?,?)", -1, &ins,
			       NULL) != SQLITE_OK)
		die("prepare orders");
	for (int i = 0; i < 20000; i++) {
		char item[32];
		snprintf(item, sizeof item, "item-%03u", rnd(300));
		sqlite3_bind_int(ins, 1, 1 + (int)rnd(5000));
		sqlite3_bind_text(ins, 2, item, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int(ins, 3, 1 + (int)rnd(20));
		sqlite3_bind_double(ins, 4, (1 + rnd(10000)) / 100.0);
		char day[16];
		snprintf(day, sizeof day, "2024-%02u-%02u", 1 + rnd(12), 1 + rnd(28));
		sqlite3_bind_text(ins, 5, day, -1, SQLITE_TRANSIENT);
		if (sqlite3_step(ins) != SQLITE_DONE)
			die("insert orders");
		sqlite3_reset(ins);
	}
	sqlite3_finalize(ins);
	exec("COMMIT");
}

static int has(const char *opt)
{
	return sqlite3_compileoption_used(opt);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: driver DBFILE\n");
		return 2;
	}
	remove(argv[1]);
	if (sqlite3_open(argv[1], &db) != SQLITE_OK)
		die("open");
	printf("sqlite %s\n", sqlite3_libversion());
	printf("threadsafe %d, fts3 %d fts5 %d rtree %d json %d\n", sqlite3_threadsafe(), has("ENABLE_FTS3"),
	       has("ENABLE_FTS5"), has("ENABLE_RTREE"), !has("OMIT_JSON"));
	sqlite3_create_function(db, "rot13", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, fn_rot13, NULL, NULL);
	sqlite3_create_function(db, "fnvagg", 1, SQLITE_UTF8, NULL, NULL, agg_step, agg_final);
	sqlite3_create_collation(db, "bylen", SQLITE_UTF8, NULL, collate_len);

	exec("PRAGMA journal_mode=WAL");
	exec("PRAGMA synchronous=OFF"); /* journals are still written, without waiting for the disk */
	exec("PRAGMA cache_size=200"); /* small cache: more paging */
	exec("CREATE TABLE people(id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT, born INT, salary REAL, note TEXT);"
	     "CREATE TABLE orders(id INTEGER PRIMARY KEY, person INT REFERENCES people(id), item TEXT, qty INT, price REAL, day TEXT);"
	     "CREATE TABLE audit(id INTEGER PRIMARY KEY, what TEXT, ref INT, at INT);"
	     "CREATE TABLE totals(person INT PRIMARY KEY, n INT, amount REAL) WITHOUT ROWID;");
	exec("CREATE TRIGGER people_del AFTER DELETE ON people BEGIN "
	     "  INSERT INTO audit(what, ref, at) VALUES('delete person', old.id, (SELECT count(*) FROM audit)); "
	     "  DELETE FROM orders WHERE person = old.id; END;"
	     "CREATE TRIGGER orders_ins AFTER INSERT ON orders BEGIN "
	     "  INSERT INTO totals(person, n, amount) VALUES(new.person, 1, new.qty * new.price) "
	     "  ON CONFLICT(person) DO UPDATE SET n = n + 1, amount = amount + excluded.amount; END;"
	     "CREATE TRIGGER salary_upd BEFORE UPDATE OF salary ON people WHEN new.salary > 90000 BEGIN "
	     "  SELECT RAISE(IGNORE); END;");
	populate();
	exec("CREATE INDEX people_city ON people(city, born);"
	     "CREATE INDEX orders_person ON orders(person);"
	     "CREATE INDEX orders_day_item ON orders(day, item);"
	     "CREATE UNIQUE INDEX people_name ON people(name);"
	     "CREATE VIEW big_spenders AS SELECT p.name, t.amount FROM totals t JOIN people p ON p.id = t.person WHERE t.amount > 5000;");
	exec("ANALYZE");

	query("counts", "SELECT (SELECT count(*) FROM people), (SELECT count(*) FROM orders), (SELECT count(*) FROM totals)");
	query("people by city", "SELECT city, count(*), min(born), max(born), round(avg(salary), 2), count(salary) FROM people GROUP BY city ORDER BY city");
	query("decades", "SELECT born / 10 * 10 AS decade, count(*) FROM people GROUP BY decade HAVING count(*) > 400 ORDER BY decade");
	query("top customers", "SELECT p.name, count(o.id), round(sum(o.qty * o.price), 2) AS total FROM people p JOIN orders o ON o.person = p.id GROUP BY p.id ORDER BY total DESC, p.id LIMIT 10");
	query("no orders", "SELECT count(*) FROM people p LEFT JOIN orders o ON o.person = p.id WHERE o.id IS NULL");
	query("items per month", "SELECT substr(day, 1, 7) AS month, count(DISTINCT item), sum(qty) FROM orders GROUP BY month ORDER BY month");
	query("window ranks", "SELECT city, name, salary, rank() OVER w, round(sum(salary) OVER w, 2) FROM people WHERE salary IS NOT NULL AND id % 97 = 0 WINDOW w AS (PARTITION BY city ORDER BY salary DESC) ORDER BY city, salary DESC LIMIT 25");
	query("running total", "SELECT day, round(sum(qty * price) OVER (ORDER BY day ROWS BETWEEN 2 PRECEDING AND CURRENT ROW), 2) FROM (SELECT day, sum(qty) AS qty, avg(price) AS price FROM orders GROUP BY day) ORDER BY day LIMIT 15");
	query("ntile/lag", "SELECT id, born, ntile(4) OVER (ORDER BY born, id), lag(born, 1, -1) OVER (ORDER BY id) FROM people WHERE id <= 12 ORDER BY id");
	query("recursive cte", "WITH RECURSIVE fib(n, a, b) AS (SELECT 1, 0, 1 UNION ALL SELECT n + 1, b, a + b FROM fib WHERE n < 60) SELECT n, a FROM fib WHERE n % 10 = 0");
	query("cte join", "WITH spend AS (SELECT person, sum(qty * price) AS s FROM orders GROUP BY person) SELECT p.city, round(avg(s), 3), max(s) > 0 FROM spend JOIN people p ON p.id = spend.person GROUP BY p.city ORDER BY 2 DESC");
	query("subqueries", "SELECT name FROM people WHERE salary > (SELECT avg(salary) * 1.9 FROM people) AND id IN (SELECT person FROM orders WHERE qty = 20) ORDER BY name LIMIT 10");
	query("exists/case", "SELECT CASE WHEN born < 1950 THEN 'old' WHEN born < 1990 THEN 'mid' ELSE 'young' END AS g, count(*), sum(EXISTS(SELECT 1 FROM orders WHERE person = people.id AND qty > 18)) FROM people GROUP BY g ORDER BY g");
	query("strings", "SELECT upper(substr(name, 1, 3)), length(name), instr(name, ' '), replace(note, ' ', '_'), rot13(city), printf('%08.3f|%-6s|%x', salary, city, born) FROM people WHERE id IN (1, 2, 3, 4999)");
	query("like/glob", "SELECT count(*), sum(name LIKE 'a%'), sum(name GLOB '*[0-9]9'), sum(note LIKE '%cache%') FROM people");
	query("collation", "SELECT city FROM (SELECT DISTINCT city FROM people) ORDER BY city COLLATE bylen, city");
	query("custom aggregate", "SELECT city, fnvagg(name) FROM (SELECT city, name FROM people ORDER BY id) GROUP BY city ORDER BY city");
	query("union/except", "SELECT item FROM orders WHERE qty = 1 AND price < 2 UNION SELECT item FROM orders WHERE qty = 20 AND price > 99 EXCEPT SELECT item FROM orders WHERE day < '2024-01-05' ORDER BY 1 LIMIT 10");
	query("math", "SELECT abs(-5), round(2.5), round(-2.5), 7 / 2, 7 % 3, 7.0 / 2, typeof(1/2.0), cast('12abc' AS INT), cast(3.99 AS INT), 1 << 40, ~5, coalesce(NULL, NULL, 'c'), nullif(3, 3), iif(1, 'y', 'n'), max(1, 2.5, '3'), hex(zeroblob(3)), quote('it''s')");
	query("dates", "SELECT date('2024-02-28', '+1 day'), date('2023-02-28', '+1 day'), strftime('%j %w %W', '2024-12-31'), julianday('2000-01-01') - julianday('1970-01-01'), datetime(0, 'unixepoch'), time('12:34:56', '+3661 seconds')");

	/* transactions: rollback and savepoints */
	exec("BEGIN; DELETE FROM orders WHERE qty < 10; UPDATE people SET salary = salary * 2;");
	query("inside tx", "SELECT count(*), round(sum(salary), 2) FROM orders, (SELECT sum(salary) AS salary FROM people) LIMIT 1");
	exec("ROLLBACK");
	query("after rollback", "SELECT count(*) FROM orders");
	exec("BEGIN; SAVEPOINT a; DELETE FROM people WHERE id % 10 = 0; SAVEPOINT b; DELETE FROM people WHERE id % 10 = 1;"
	     "ROLLBACK TO b; RELEASE a; COMMIT;");
	query("after savepoints", "SELECT count(*), (SELECT count(*) FROM audit), (SELECT count(*) FROM orders), (SELECT max(at) FROM audit) FROM people");
	exec("UPDATE people SET salary = 95000 WHERE id = 3; UPDATE people SET salary = 12345.5 WHERE id = 4;");
	query("trigger raise ignore", "SELECT id, salary FROM people WHERE id IN (3, 4)");
	query("view", "SELECT count(*), round(max(amount), 2) FROM big_spenders");
	query("upsert totals", "SELECT person, n, round(amount, 2) FROM totals ORDER BY n DESC, person LIMIT 5");
	query_x("constraint error", "INSERT INTO people(id, name) VALUES (2, 'dup')", 1);
	query("returning", "UPDATE orders SET qty = qty + 100 WHERE id IN (5, 6, 7) RETURNING id, qty");

	/* FTS */
	if (has("ENABLE_FTS5")) {
		exec("CREATE VIRTUAL TABLE docs USING fts5(title, body);"
		     "INSERT INTO docs(title, body) SELECT name, note || ' ' || city FROM people WHERE id % 3 = 0;");
		query("fts5 match", "SELECT count(*) FROM docs WHERE docs MATCH 'cache AND (Oslo OR Lima)'");
		query("fts5 rank", "SELECT title, snippet(docs, 1, '[', ']', '...', 4) FROM docs WHERE docs MATCH 'hot NEAR(cold)' ORDER BY rank, title LIMIT 5");
		query("fts5 prefix", "SELECT count(*) FROM docs WHERE docs MATCH 'check*'");
	}
	if (has("ENABLE_FTS3")) {
		exec("CREATE VIRTUAL TABLE docs4 USING fts4(body);"
		     "INSERT INTO docs4(body) SELECT note FROM people WHERE id % 5 = 0;");
		query("fts4", "SELECT count(*) FROM docs4 WHERE docs4 MATCH 'memory OR thread'");
		query("fts4 offsets", "SELECT rowid, offsets(docs4), matchinfo(docs4) IS NOT NULL FROM docs4 WHERE docs4 MATCH 'memory thread' ORDER BY rowid LIMIT 5");
	}
	/* JSON */
	query("json build", "SELECT json_object('id', id, 'name', name, 'tags', json_array(city, born)) FROM people WHERE id < 4");
	query("json extract", "SELECT json_extract('{\"a\":[1,2,{\"b\":\"x\"}]}', '$.a[2].b'), json_array_length('[1,2,3,[4]]'), json_type('{\"k\":1.5}', '$.k'), json_valid('{bad')");
	query("json each", "SELECT key, value, type FROM json_each('{\"z\":1,\"y\":[1,2],\"x\":null,\"w\":\"s\"}')");
	query("json tree", "SELECT count(*), group_concat(fullkey, ' ') FROM json_tree('{\"a\":{\"b\":[1,{\"c\":2}]}}')");
	query("json agg", "SELECT city, json_group_array(id) FROM (SELECT city, id FROM people WHERE id < 40 ORDER BY id) GROUP BY city ORDER BY city");
	query("json modify", "SELECT json_set('{\"a\":1}', '$.b', 2, '$.a', 3), json_remove('[1,2,3]', '$[1]'), json_patch('{\"a\":1,\"b\":2}', '{\"b\":null,\"c\":3}'), '{\"x\":[5,6]}' -> '$.x' ->> 1");
	/* R-tree */
	if (has("ENABLE_RTREE")) {
		exec("CREATE VIRTUAL TABLE boxes USING rtree(id, x0, x1, y0, y1);"
		     "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) "
		     "INSERT INTO boxes SELECT i, (i * 37) % 1000, (i * 37) % 1000 + 10, (i * 91) % 1000, (i * 91) % 1000 + 15 FROM n;");
		query("rtree", "SELECT count(*), min(id), max(id) FROM boxes WHERE x0 >= 100 AND x1 <= 300 AND y0 >= 200 AND y1 <= 600");
	}
	/* blobs and incremental I/O */
	exec("CREATE TABLE blobs(id INTEGER PRIMARY KEY, data BLOB); INSERT INTO blobs(data) VALUES (zeroblob(100000)), (x''), (x'00ff10');");
	sqlite3_blob *bl;
	if (sqlite3_blob_open(db, "main", "blobs", "data", 1, 1, &bl) == SQLITE_OK) {
		char buf[4096];
		for (int i = 0; i < 24; i++) {
			memset(buf, 'a' + i, sizeof buf);
			sqlite3_blob_write(bl, buf, sizeof buf, i * 4096);
		}
		sqlite3_blob_close(bl);
	}
	query("blobs", "SELECT id, length(data), hex(substr(data, 4095, 3)), hex(substr(data, 98000, 2)) FROM blobs ORDER BY id");
	/* schema changes, vacuum, integrity */
	exec("ALTER TABLE people ADD COLUMN email TEXT DEFAULT 'none';"
	     "ALTER TABLE people RENAME COLUMN note TO remark;"
	     "UPDATE people SET email = lower(replace(name, ' ', '.')) || '@example.org' WHERE id % 250 = 7;");
	query("altered", "SELECT id, email, remark FROM people WHERE id % 500 = 7 ORDER BY id");
	exec("PRAGMA journal_mode=DELETE; VACUUM;");
	query("integrity", "PRAGMA integrity_check");
	query("schema", "SELECT type, name, tbl_name FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' AND name NOT LIKE 'docs%' ORDER BY type, name");
	query("query plan", "EXPLAIN QUERY PLAN SELECT p.name, o.item FROM orders o JOIN people p ON p.id = o.person WHERE o.person = 5 AND p.city = 'Oslo'");

	/* an in-memory database and backup into it */
	sqlite3 *mem;
	sqlite3_open(":memory:", &mem);
	sqlite3_backup *bk = sqlite3_backup_init(mem, "main", db, "main");
	if (bk) {
		while (sqlite3_backup_step(bk, 64) == SQLITE_OK)
			;
		sqlite3_backup_finish(bk);
	}
	sqlite3 *saved = db;
	db = mem;
	query("backup copy", "SELECT count(*), (SELECT count(*) FROM orders) FROM people");
	db = saved;
	sqlite3_close(mem);

	printf("changes %d total %d\n", sqlite3_changes(db), sqlite3_total_changes(db));
	sqlite3_close(db);
	printf("%d failures\n", failures);
	return failures != 0;
}
