# libxml2 2.9.14: configure without Python bindings, static library compiled
# -fPIC. Tests: the programs `make check` runs (runtest, testrecurse,
# testapi, testchar, testdict, runxmlconf when the W3C suite is there; it is
# not in Debian's source) and the fuzz/ regression corpus (`make -C fuzz
# tests`), one result each; runtest's own groups (XML, HTML, XPath,
# schemas, ...) counted one by one from its output.
RW_DEVPKG=libxml2-dev
RW_SRC=libxml2

rw_build() {
	./configure --without-python --disable-shared --with-pic
	make
	make runtest testrecurse testapi testcatalog testchar testdict runxmlconf
	make -C fuzz $(rw_make_var fuzz check_PROGRAMS) || true
}

rw_test() {
	[ -d xmlconf ] || rw_record SKIP runxmlconf
	rw_unit runtest ./runtest
	# "## XML regression tests" ... "Ran 1234 tests, no errors" or "N errors"
	awk '/^## /{name=$0; sub(/^## /, "", name); gsub(/ /, "_", name)}
		/^Ran [0-9]+ tests, no errors/ {print "PASS runtest/" name}
		/^Ran [0-9]+ tests, [0-9]+ errors/ {print "FAIL runtest/" name}' "$RW_LOGDIR/runtest.log" >>"$RW_RESULTS"
	rw_unit testrecurse ./testrecurse
	rw_unit testapi ./testapi -q
	rw_unit testchar ./testchar
	rw_unit testdict ./testdict
	[ -d xmlconf ] && rw_unit runxmlconf ./runxmlconf
	rw_unit fuzz-tests make -C fuzz tests
}
