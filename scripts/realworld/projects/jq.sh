# jq 1.6 with Debian's oniguruma (libonig-dev): autoreconf, configure with
# static libjq compiled -fPIC. Tests: `make check` (tests/mantest, jqtest,
# onigtest, shtest), one result each, without valgrind (timed); then, where
# valgrind is installed, the same suite under valgrind (as upstream runs it:
# memcheck, --leak-check=full, --error-exitcode=1) as valgrind/*, in the
# plain and vptrace builds (the Go runtime is in every process) with the
# runtime's suppressions, bin/vptrace.supp (skipped without them). Not in
# pad and clobber: memcheck over every clobbered instruction ran for tens of
# minutes.
RW_DEVPKG=libjq-dev
RW_SRC=jq

rw_build() {
	autoreconf -fi
	./configure --with-oniguruma=yes --disable-docs --disable-maintainer-mode \
		--disable-shared --with-pic
	make
	make $(rw_make_var . check_PROGRAMS)
}

rw_test() {
	make -k check NO_VALGRIND=1 >"$RW_LOGDIR/make-check.log" 2>&1 || true
	rw_automake tests
	rw_timed_end
	command -v valgrind >/dev/null || return 0
	local supp=$RW_TOOLS/vptrace.supp t
	if [ ! -f "$supp" ] || [ "$RW_MODE" = pad ] || [ "$RW_MODE" = clobber ]; then
		for t in $(rw_make_var . TESTS); do rw_record SKIP "valgrind/${t#tests/}"; done
		return 0
	fi
	export VALGRIND_OPTS="--suppressions=$supp --fair-sched=yes"
	find tests -name '*.trs' -delete
	make -k check >"$RW_LOGDIR/make-check-valgrind.log" 2>&1 || true
	rw_automake tests valgrind/
}
