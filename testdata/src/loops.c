/* loops.c: functions whose loop structure is known, for the loop
 * analysis tests. Built with -fno-inline so every function stays. */
volatile int sink;

int straight(int x) { return x * 3 + 1; }

int single(int n) {
	int s = 0;
	for (int i = 0; i < n; i++)
		s += i * sink;
	return s;
}

int nested2(int n) {
	int s = 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			s += i * j + sink;
	return s;
}

int nested3(int n) {
	int s = 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			for (int k = 0; k < n; k++)
				s += i ^ j ^ k ^ sink;
	return s;
}

int with_break(int *a, int n) {
	int i;
	for (i = 0; i < n; i++) {
		if (a[i] == sink)
			break;
		sink = a[i];
	}
	return i;
}

int with_continue(int *a, int n) {
	int s = 0;
	for (int i = 0; i < n; i++) {
		if (a[i] & 1)
			continue;
		s += a[i];
		sink = s;
	}
	return s;
}

int goto_loop(int n) {
	int s = 0;
again:
	s += sink;
	if (--n > 0)
		goto again;
	return s;
}

int switch_in_loop(int *a, int n) {
	int s = 0;
	for (int i = 0; i < n; i++) {
		switch (a[i] & 7) {
		case 0: s += 1; break;
		case 1: s -= 3; break;
		case 2: s ^= 5; break;
		case 3: s *= 7; break;
		case 4: s += a[i]; break;
		case 5: s -= sink; break;
		default: s = 0;
		}
	}
	return s;
}

int recursive(int n) {
	if (n <= 1)
		return sink;
	return recursive(n - 1) + recursive(n - 2);
}

int rec_driver(int n) {
	int s = 0;
	for (int i = 0; i < n; i++)
		s += recursive(i);
	return s;
}

int deep_callee(int x) { return x * sink; }

int caller_depth2(int n) {
	int s = 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			s += deep_callee(i + j);
	return s;
}

/* Two entries into one cycle: irreducible at -O0. */
int irreducible(int n, int start) {
	int s = 0;
	if (start)
		goto b;
a:
	s += 1;
	if (s > n)
		return s;
b:
	s += sink;
	if (s < 1000)
		goto a;
	return s;
}
