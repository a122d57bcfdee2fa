# libxml2 2.9.14: autoreconf (Debian's patches change Makefile.am, as
# dh_autoreconf expects), configure without Python bindings, static library
# compiled -fPIC. Tests: the programs `make check` runs (runtest,
# testrecurse, testapi, testchar, testdict; runxmlconf needs the W3C suite,
# which is not in the source) and Debian's testcatalog, one result each;
# runtest's groups (XML, HTML, XPath, schemas, ...) also one by one
# (runtest -v: "Ran N tests, no errors"; a group of 0 tests is skipped).
#
# Debian's source leaves out upstream's test/ and result/ directories
# (debian/copyright: Files-Excluded, Debian bug #331534) but for the
# catalogs, relaxng, schemas, schematron and scripts tests its patches
# bring back: most runtest groups have nothing to run, the threads group
# fails plain (test/threads/*.xml missing), and the fuzz/ regression run
# (`make -C fuzz tests`, seeds made from test/) is skipped.
RW_DEVPKG=libxml2-dev
RW_SRC=libxml2

rw_build() {
	autoreconf -fi
	./configure --without-python --disable-shared --with-pic
	make
	make runtest testrecurse testapi testcatalog testchar testdict
}

rw_test() {
	rw_record SKIP runxmlconf
	rw_record SKIP fuzz-tests
	rw_unit runtest ./runtest -v
	# "## XML regression tests" ... "Ran 12 tests, no errors" or "Ran 12 tests, 1 errors, 0 leaks"
	awk '/^## /{name=$0; sub(/^## /, "", name); gsub(/ /, "_", name)}
		/^Ran 0 tests/ {print "SKIP runtest/" name; next}
		/^Ran [0-9]+ tests, no errors/ {print "PASS runtest/" name}
		/^Ran [0-9]+ tests, [0-9]+ errors/ {print "FAIL runtest/" name}' "$RW_LOGDIR/runtest.log" >>"$RW_RESULTS"
	rw_unit testrecurse ./testrecurse
	rw_unit testapi ./testapi -q
	rw_unit testchar ./testchar
	rw_unit testdict ./testdict
	rw_unit testcatalog ./testcatalog # Debian's (0034-testcatalog-Add-new-tests-for-catalog.c.patch)
}
