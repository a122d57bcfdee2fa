/* Accessors for TestSecondSlots: N functions without loops, each reading a
 * vector's data pointer from its header and one element, two sites each:
 * sites outside loops get a second last-page slot (ABI.md "Second slots"),
 * so 2N sites have 4N slots, more than one page of them beyond the 2N a
 * slot array sized by the sites would hold. */
#define N 300

struct vec {
	long n;
	long *data;
};

#define ACC(i) \
	__attribute__((noinline, noipa)) long acc##i(const struct vec *v, long j) { return v->data[j] + i; }
#define ACC10(i) ACC(i##0) ACC(i##1) ACC(i##2) ACC(i##3) ACC(i##4) ACC(i##5) ACC(i##6) ACC(i##7) ACC(i##8) ACC(i##9)
#define ACC100(i) ACC10(i##0) ACC10(i##1) ACC10(i##2) ACC10(i##3) ACC10(i##4) ACC10(i##5) ACC10(i##6) ACC10(i##7) ACC10(i##8) ACC10(i##9)
ACC100(1) ACC100(2) ACC100(3)

#define REF(i) acc##i,
#define REF10(i) REF(i##0) REF(i##1) REF(i##2) REF(i##3) REF(i##4) REF(i##5) REF(i##6) REF(i##7) REF(i##8) REF(i##9)
#define REF100(i) REF10(i##0) REF10(i##1) REF10(i##2) REF10(i##3) REF10(i##4) REF10(i##5) REF10(i##6) REF10(i##7) REF10(i##8) REF10(i##9)
long (*const accessors[N])(const struct vec *, long) = {REF100(1) REF100(2) REF100(3)};
