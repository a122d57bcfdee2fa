/*
 * Lua driver for the e2e suite: embeds the interpreter through the C API
 * and runs each script named on the command line in a fresh state. Besides
 * the scripts' own output it exercises the API directly: pushing and reading
 * values, calling Lua from C and C from Lua, userdata with metatables,
 * registry references, protected calls and error objects.
 *
 *   driver SCRIPT...      exit status: number of scripts that failed
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>

/* a userdata type: a fixed-size vector of doubles */
typedef struct {
	int n;
	double v[1];
} Vec;

static int vec_new(lua_State *L)
{
	int n = (int)luaL_checkinteger(L, 1);
	luaL_argcheck(L, n >= 1 && n <= 1 << 20, 1, "bad size");
	Vec *v = lua_newuserdatauv(L, sizeof(Vec) + (size_t)(n - 1) * sizeof(double), 0);
	v->n = n;
	for (int i = 0; i < n; i++)
		v->v[i] = 0;
	luaL_setmetatable(L, "e2e.Vec");
	return 1;
}

static Vec *checkvec(lua_State *L)
{
	return luaL_checkudata(L, 1, "e2e.Vec");
}

static int vec_index(lua_State *L)
{
	Vec *v = checkvec(L);
	if (lua_type(L, 2) == LUA_TSTRING) {
		luaL_getmetatable(L, "e2e.Vec");
		lua_getfield(L, -1, lua_tostring(L, 2));
		return 1;
	}
	lua_Integer i = luaL_checkinteger(L, 2);
	luaL_argcheck(L, i >= 1 && i <= v->n, 2, "index out of range");
	lua_pushnumber(L, v->v[i - 1]);
	return 1;
}

static int vec_newindex(lua_State *L)
{
	Vec *v = checkvec(L);
	lua_Integer i = luaL_checkinteger(L, 2);
	luaL_argcheck(L, i >= 1 && i <= v->n, 2, "index out of range");
	v->v[i - 1] = luaL_checknumber(L, 3);
	return 0;
}

static int vec_len(lua_State *L)
{
	lua_pushinteger(L, checkvec(L)->n);
	return 1;
}

static int vec_sum(lua_State *L)
{
	Vec *v = checkvec(L);
	double s = 0;
	for (int i = 0; i < v->n; i++)
		s += v->v[i];
	lua_pushnumber(L, s);
	return 1;
}

static int vec_tostring(lua_State *L)
{
	Vec *v = checkvec(L);
	luaL_Buffer b;
	luaL_buffinit(L, &b);
	luaL_addstring(&b, "Vec(");
	for (int i = 0; i < v->n && i < 8; i++) {
		char tmp[64];
		snprintf(tmp, sizeof tmp, i ? ", %g" : "%g", v->v[i]);
		luaL_addstring(&b, tmp);
	}
	if (v->n > 8)
		luaL_addstring(&b, ", ...");
	luaL_addchar(&b, ')');
	luaL_pushresult(&b);
	return 1;
}

/* calls a Lua function with each element and stores the results */
static int vec_map(lua_State *L)
{
	Vec *v = checkvec(L);
	luaL_checktype(L, 2, LUA_TFUNCTION);
	for (int i = 0; i < v->n; i++) {
		lua_pushvalue(L, 2);
		lua_pushnumber(L, v->v[i]);
		lua_pushinteger(L, i + 1);
		lua_call(L, 2, 1);
		v->v[i] = luaL_checknumber(L, -1);
		lua_pop(L, 1);
	}
	lua_settop(L, 1);
	return 1;
}

static const luaL_Reg vec_methods[] = {
	{"__index", vec_index}, {"__newindex", vec_newindex}, {"__len", vec_len},
	{"__tostring", vec_tostring}, {"sum", vec_sum}, {"map", vec_map}, {NULL, NULL},
};

/* c_sort(t): sorts an array of numbers in C via qsort, returns count */
static int cmp_num(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int c_sort(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TTABLE);
	lua_Integer n = luaL_len(L, 1);
	double *tmp = malloc((size_t)(n + 1) * sizeof *tmp);
	for (lua_Integer i = 1; i <= n; i++) {
		lua_geti(L, 1, i);
		tmp[i - 1] = luaL_checknumber(L, -1);
		lua_pop(L, 1);
	}
	qsort(tmp, (size_t)n, sizeof *tmp, cmp_num);
	for (lua_Integer i = 1; i <= n; i++) {
		lua_pushnumber(L, tmp[i - 1]);
		lua_seti(L, 1, i);
	}
	free(tmp);
	lua_pushinteger(L, n);
	return 1;
}

/* c_error(msg, asTable): raises an error from C */
static int c_error(lua_State *L)
{
	const char *msg = luaL_checkstring(L, 1);
	if (lua_toboolean(L, 2)) {
		lua_newtable(L);
		lua_pushstring(L, msg);
		lua_setfield(L, -2, "msg");
		lua_pushinteger(L, 42);
		lua_setfield(L, -2, "code");
		return lua_error(L);
	}
	return luaL_error(L, "c_error: %s", msg);
}

/* c_pcall(f, ...): calls f in protected mode from C; returns ok, results or message */
static int c_pcall(lua_State *L)
{
	int n = lua_gettop(L);
	luaL_checktype(L, 1, LUA_TFUNCTION);
	int rc = lua_pcall(L, n - 1, LUA_MULTRET, 0);
	lua_pushboolean(L, rc == LUA_OK);
	lua_insert(L, 1);
	return lua_gettop(L);
}

/* c_counter(): returns a C closure with an upvalue */
static int counter_step(lua_State *L)
{
	lua_Integer v = lua_tointeger(L, lua_upvalueindex(1)) + luaL_optinteger(L, 1, 1);
	lua_pushinteger(L, v);
	lua_copy(L, -1, lua_upvalueindex(1));
	return 1;
}

static int c_counter(lua_State *L)
{
	lua_pushinteger(L, luaL_optinteger(L, 1, 0));
	lua_pushcclosure(L, counter_step, 1);
	return 1;
}

static int ref_demo(lua_State *L)
{
	/* store values in the registry and get them back */
	int refs[16];
	for (int i = 0; i < 16; i++) {
		lua_pushfstring(L, "value-%d", i * i);
		refs[i] = luaL_ref(L, LUA_REGISTRYINDEX);
	}
	luaL_Buffer b;
	luaL_buffinit(L, &b);
	for (int i = 15; i >= 0; i -= 3) {
		lua_rawgeti(L, LUA_REGISTRYINDEX, refs[i]);
		luaL_addvalue(&b);
		luaL_addchar(&b, ' ');
	}
	for (int i = 0; i < 16; i++)
		luaL_unref(L, LUA_REGISTRYINDEX, refs[i]);
	luaL_pushresult(&b);
	return 1;
}

static void open_e2e(lua_State *L)
{
	luaL_newmetatable(L, "e2e.Vec");
	luaL_setfuncs(L, vec_methods, 0);
	lua_pop(L, 1);
	static const luaL_Reg funcs[] = {
		{"vec", vec_new}, {"c_sort", c_sort}, {"c_error", c_error}, {"c_pcall", c_pcall},
		{"c_counter", c_counter}, {"ref_demo", ref_demo}, {NULL, NULL},
	};
	luaL_newlib(L, funcs);
	lua_setglobal(L, "e2e");
}

static int traceback(lua_State *L)
{
	const char *msg = lua_tostring(L, 1);
	if (!msg)
		msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
	/* keep only the message: tracebacks contain no addresses but do name C frames */
	lua_pushstring(L, msg);
	return 1;
}

static int run_script(const char *path)
{
	lua_State *L = luaL_newstate();
	if (!L) {
		printf("cannot create state\n");
		return 1;
	}
	luaL_openlibs(L);
	open_e2e(L);
	const char *base = strrchr(path, '/');
	printf("== %s\n", base ? base + 1 : path);
	fflush(stdout);
	lua_pushcfunction(L, traceback);
	int rc = luaL_loadfile(L, path);
	if (rc == LUA_OK)
		rc = lua_pcall(L, 0, 0, 1);
	if (rc != LUA_OK)
		printf("error: %s\n", lua_tostring(L, -1));
	lua_gc(L, LUA_GCCOLLECT);
	lua_close(L);
	fflush(stdout);
	return rc != LUA_OK;
}

static void api_checks(void)
{
	lua_State *L = luaL_newstate();
	luaL_openlibs(L);
	printf("== api\n");
	/* stack manipulation and conversions */
	lua_pushinteger(L, 42);
	lua_pushnumber(L, 2.5);
	lua_pushstring(L, "17");
	lua_pushboolean(L, 1);
	lua_pushnil(L);
	printf("top %d types %s %s %s %s %s\n", lua_gettop(L), luaL_typename(L, 1), luaL_typename(L, 2),
	       luaL_typename(L, 3), luaL_typename(L, 4), luaL_typename(L, 5));
	int isnum;
	lua_Integer s = lua_tointegerx(L, 3, &isnum);
	printf("tointeger(\"17\") = %lld (%d)\n", (long long)s, isnum);
	lua_settop(L, 0);
	/* arithmetic and comparison through the API */
	lua_pushinteger(L, 7);
	lua_pushinteger(L, 3);
	lua_arith(L, LUA_OPIDIV);
	lua_pushinteger(L, 7);
	lua_pushinteger(L, 3);
	lua_arith(L, LUA_OPMOD);
	lua_pushnumber(L, 2);
	lua_pushnumber(L, 10);
	lua_arith(L, LUA_OPPOW);
	printf("7//3=%lld 7%%3=%lld 2^10=%g lt=%d\n", (long long)lua_tointeger(L, 1), (long long)lua_tointeger(L, 2),
	       lua_tonumber(L, 3), lua_compare(L, 1, 2, LUA_OPLT));
	lua_settop(L, 0);
	/* tables from C */
	lua_createtable(L, 10, 4);
	for (int i = 1; i <= 10; i++) {
		lua_pushinteger(L, i * i);
		lua_seti(L, -2, i);
	}
	lua_pushstring(L, "hello");
	lua_setfield(L, -2, "greeting");
	lua_setglobal(L, "T");
	(void)luaL_dostring(L, "local s = 0 for i, v in ipairs(T) do s = s + v end return s, #T, T.greeting");
	printf("sum %lld len %lld greeting %s\n", (long long)lua_tointeger(L, -3), (long long)lua_tointeger(L, -2),
	       lua_tostring(L, -1));
	lua_settop(L, 0);
	/* calling Lua from C */
	(void)luaL_dostring(L, "function fib(n) if n < 2 then return n end return fib(n-1) + fib(n-2) end");
	for (int n = 0; n <= 25; n += 5) {
		lua_getglobal(L, "fib");
		lua_pushinteger(L, n);
		lua_call(L, 1, 1);
		printf("fib(%d) = %lld\n", n, (long long)lua_tointeger(L, -1));
		lua_pop(L, 1);
	}
	/* errors from C */
	int rc = luaL_dostring(L, "error({code = 7})");
	lua_getfield(L, -1, "code");
	printf("error object code %lld rc %d\n", (long long)lua_tointeger(L, -1), rc);
	lua_settop(L, 0);
	rc = luaL_loadstring(L, "return +");
	printf("syntax error rc %d: %s\n", rc, lua_tostring(L, -1));
	lua_settop(L, 0);
	/* string buffer */
	luaL_Buffer b;
	luaL_buffinit(L, &b);
	for (int i = 0; i < 1000; i++)
		luaL_addstring(&b, "0123456789");
	luaL_pushresult(&b);
	printf("buffer len %lld\n", (long long)luaL_len(L, -1));
	lua_close(L);
}

int main(int argc, char **argv)
{
	int failed = 0;
	api_checks();
	for (int i = 1; i < argc; i++)
		failed += run_script(argv[i]);
	printf("%d scripts failed\n", failed);
	return failed;
}
