package effect

import (
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"hijack/ibr"
	"hijack/ibr/x86len"
)

// effectCases give, for one instruction in GNU assembler syntax, the
// expected Effect.String(): used, defined and partly written registers,
// flags used, defined, undefined and maybe written, memory accesses
// (direction, size, address, and rep/vsib/masked/bitoffset/implicit) and
// control. Every class of the model is covered.
var effectCases = []struct{ asm, want string }{
	{"add %ebx,%eax", "use={rax,rbx} def={rax} fdef=CF|PF|AF|ZF|SF|OF"},
	{"add %bl,%ah", "use={rax,rbx} partial={rax} fdef=CF|PF|AF|ZF|SF|OF"},
	{"addw $1,(%rsi)", "use={rsi} fdef=CF|PF|AF|ZF|SF|OF mem=[RW 2 [rsi]]"},
	{"addq $1,8(%rsp,%rcx,8)", "use={rcx,rsp} fdef=CF|PF|AF|ZF|SF|OF mem=[RW 8 [rsp+rcx*8+0x8]]"},
	{"lock addl $1,%fs:16(%rax)", "use={rax} fdef=CF|PF|AF|ZF|SF|OF mem=[RW 4 fs:[rax+0x10]]"},
	{"adc %rbx,%rax", "use={rax,rbx} def={rax} fuse=CF fdef=CF|PF|AF|ZF|SF|OF"},
	{"sbb $0,%ecx", "use={rcx} def={rcx} fuse=CF fdef=CF|PF|AF|ZF|SF|OF"},
	{"and %r8,%r9", "use={r8,r9} def={r9} fdef=CF|PF|AF|ZF|SF|OF fundef=AF"},
	{"or %al,(%rdi)", "use={rax,rdi} fdef=CF|PF|AF|ZF|SF|OF fundef=AF mem=[RW 1 [rdi]]"},
	{"xor %ebx,%eax", "use={rax,rbx} def={rax} fdef=CF|PF|AF|ZF|SF|OF fundef=AF"},
	{"cmp %ebx,%eax", "use={rax,rbx} fdef=CF|PF|AF|ZF|SF|OF"},
	{"cmpb $0,(%rsi,%rdx)", "use={rdx,rsi} fdef=CF|PF|AF|ZF|SF|OF mem=[R 1 [rsi+rdx]]"},
	{"test %eax,%eax", "use={rax} fdef=CF|PF|AF|ZF|SF|OF fundef=AF"},
	{"testb $1,0x10(%rip)", "fdef=CF|PF|AF|ZF|SF|OF fundef=AF mem=[R 1 [rip+0x10]]"},
	{"neg %rax", "use={rax} def={rax} fdef=CF|PF|AF|ZF|SF|OF"},
	{"not %r10d", "use={r10} def={r10}"},
	{"inc %eax", "use={rax} def={rax} fdef=PF|AF|ZF|SF|OF"},
	{"decb (%rdi)", "use={rdi} fdef=PF|AF|ZF|SF|OF mem=[RW 1 [rdi]]"},
	{"xor %eax,%eax", "def={rax} fdef=CF|PF|AF|ZF|SF|OF fundef=AF"},
	{"xor %r11,%r11", "def={r11} fdef=CF|PF|AF|ZF|SF|OF fundef=AF"},
	{"sub %ecx,%ecx", "def={rcx} fdef=CF|PF|AF|ZF|SF|OF"},
	{"sbb %eax,%eax", "def={rax} fuse=CF fdef=CF|PF|AF|ZF|SF|OF"},
	{"cmp %rdx,%rdx", "fdef=CF|PF|AF|ZF|SF|OF"},
	{"xor %al,%al", "use={rax} partial={rax} fdef=CF|PF|AF|ZF|SF|OF fundef=AF"},
	{"mov %ebx,%eax", "use={rbx} def={rax}"},
	{"mov %bl,%al", "use={rax,rbx} partial={rax}"},
	{"mov %bh,%cl", "use={rcx,rbx} partial={rcx}"},
	{"mov %ax,%dx", "use={rax,rdx} partial={rdx}"},
	{"mov (%rsi),%rax", "use={rsi} def={rax} mem=[R 8 [rsi]]"},
	{"mov %eax,(%rdi,%rcx,4)", "use={rax,rcx,rdi} mem=[W 4 [rdi+rcx*4]]"},
	{"movl $1,-4(%rbp)", "use={rbp} mem=[W 4 [rbp-0x4]]"},
	{"movabs 0x1122334455667788,%eax", "def={rax} mem=[R 4 [0x1122334455667788]]"},
	{"mov %gs:0,%rax", "def={rax} mem=[R 8 gs:[0x0]]"},
	{"addr32 mov (%esi),%eax", "use={rsi} def={rax} mem=[R 4 [esi]]"},
	{"movzbl (%rsi),%eax", "use={rsi} def={rax} mem=[R 1 [rsi]]"},
	{"movzwl %ax,%eax", "use={rax} def={rax}"},
	{"movsbq %al,%rax", "use={rax} def={rax}"},
	{"movslq %eax,%rdx", "use={rax} def={rdx}"},
	{"movsbw %al,%cx", "use={rax,rcx} partial={rcx}"},
	{"lea 8(%rbx,%rcx,4),%eax", "use={rcx,rbx} def={rax}"},
	{"lea 0x100(%rip),%rdi", "def={rdi}"},
	{"lea (%rax),%ax", "use={rax} partial={rax}"},
	{"xchg %rax,%rbx", "use={rax,rbx} def={rax,rbx}"},
	{"xchg %eax,(%rbx)", "use={rax,rbx} def={rax} mem=[RW 4 [rbx]]"},
	{"xchg %ah,%al", "use={rax} partial={rax}"},
	{"xadd %eax,(%rdi)", "use={rax,rdi} def={rax} fdef=CF|PF|AF|ZF|SF|OF mem=[RW 4 [rdi]]"},
	{"cmpxchg %rcx,(%rdi)", "use={rax,rcx,rdi} partial={rax} fdef=CF|PF|AF|ZF|SF|OF mem=[RW 8 [rdi]]"},
	{"cmpxchg %ecx,%edx", "use={rax,rcx,rdx} partial={rax,rdx} fdef=CF|PF|AF|ZF|SF|OF"},
	{"lock cmpxchg16b (%rdi)", "use={rax,rcx,rdx,rbx,rdi} partial={rax,rdx} fdef=ZF mem=[RW 16 [rdi]]"},
	{"cmpxchg8b (%rdi)", "use={rax,rcx,rdx,rbx,rdi} partial={rax,rdx} fdef=ZF mem=[RW 8 [rdi]]"},
	{"bswap %rcx", "use={rcx} def={rcx}"},
	{"movbe %eax,(%rdi)", "use={rax,rdi} mem=[W 4 [rdi]]"},
	{"crc32b (%rsi),%eax", "use={rax,rsi} def={rax} mem=[R 1 [rsi]]"},
	{"popcnt (%rdi),%rax", "use={rdi} def={rax} fdef=CF|PF|AF|ZF|SF|OF mem=[R 8 [rdi]]"},
	{"lzcnt %ax,%bx", "use={rax,rbx} partial={rbx} fdef=CF|PF|AF|ZF|SF|OF fundef=PF|AF|SF|OF"},
	{"tzcnt %rdi,%rax", "use={rdi} def={rax} fdef=CF|PF|AF|ZF|SF|OF fundef=PF|AF|SF|OF"},
	{"bsr %edi,%eax", "use={rax,rdi} partial={rax} fdef=CF|PF|AF|ZF|SF|OF fundef=CF|PF|AF|SF|OF"},
	{"bsf %rax,%rcx", "use={rax,rcx} partial={rcx} fdef=CF|PF|AF|ZF|SF|OF fundef=CF|PF|AF|SF|OF"},
	{"bt %eax,%ebx", "use={rax,rbx} fdef=CF|PF|AF|SF|OF fundef=PF|AF|SF|OF"},
	{"bt %rax,(%rdi)", "use={rax,rdi} fdef=CF|PF|AF|SF|OF fundef=PF|AF|SF|OF mem=[R 8 [rdi] bitoffset]"},
	{"btl $3,(%rdi)", "use={rdi} fdef=CF|PF|AF|SF|OF fundef=PF|AF|SF|OF mem=[R 4 [rdi]]"},
	{"bts %rax,(%rdi)", "use={rax,rdi} fdef=CF|PF|AF|SF|OF fundef=PF|AF|SF|OF mem=[RW 8 [rdi] bitoffset]"},
	{"btr $5,%ecx", "use={rcx} def={rcx} fdef=CF|PF|AF|SF|OF fundef=PF|AF|SF|OF"},
	{"btc %cx,%dx", "use={rcx,rdx} partial={rdx} fdef=CF|PF|AF|SF|OF fundef=PF|AF|SF|OF"},
	{"shl %eax", "use={rax} def={rax} fdef=CF|PF|AF|ZF|SF|OF fundef=AF"},
	{"shl $1,%eax", "use={rax} def={rax} fdef=CF|PF|AF|ZF|SF|OF fundef=AF"},
	{"shl $5,%rax", "use={rax} def={rax} fdef=CF|PF|AF|ZF|SF|OF fundef=AF|OF"},
	{"shl $0,%eax", "use={rax} def={rax}"},
	{"shl $32,%eax", "use={rax} def={rax}"},
	{"shl $32,%rax", "use={rax} def={rax} fdef=CF|PF|AF|ZF|SF|OF fundef=AF|OF"},
	{"shr $9,%al", "use={rax} partial={rax} fdef=CF|PF|AF|ZF|SF|OF fundef=CF|AF|OF"},
	{"sar %cl,%edx", "use={rcx,rdx} def={rdx} fuse=CF|PF|AF|ZF|SF|OF fmay=CF|PF|AF|ZF|SF|OF fpass=CF|PF|AF|ZF|SF|OF"},
	{"shlb %cl,(%rdi)", "use={rcx,rdi} fuse=CF|PF|AF|ZF|SF|OF fmay=CF|PF|AF|ZF|SF|OF fpass=CF|PF|AF|ZF|SF|OF mem=[RW 1 [rdi]]"},
	{"rol $1,%eax", "use={rax} def={rax} fdef=CF|OF"},
	{"ror $7,%eax", "use={rax} def={rax} fdef=CF|OF fundef=OF"},
	{"rol %cl,%rax", "use={rax,rcx} def={rax} fuse=CF|OF fmay=CF|OF fpass=CF|OF"},
	{"rcl $1,%eax", "use={rax} def={rax} fuse=CF fdef=CF|OF"},
	{"rcr $3,%rbx", "use={rbx} def={rbx} fuse=CF fdef=CF|OF fundef=OF"},
	{"rcl %cl,%eax", "use={rax,rcx} def={rax} fuse=CF|OF fmay=CF|OF fpass=OF"},
	{"shld $4,%ebx,%eax", "use={rax,rbx} def={rax} fdef=CF|PF|AF|ZF|SF|OF fundef=AF|OF"},
	{"shrd %cl,%rbx,%rax", "use={rax,rcx,rbx} def={rax} fuse=CF|PF|AF|ZF|SF|OF fmay=CF|PF|AF|ZF|SF|OF fpass=CF|PF|AF|ZF|SF|OF"},
	{"shld $0,%ebx,%eax", "use={rax,rbx} def={rax}"},
	{"mul %ebx", "use={rax,rbx} def={rax,rdx} fdef=CF|PF|AF|ZF|SF|OF fundef=PF|AF|ZF|SF"},
	{"mul %bl", "use={rax,rbx} partial={rax} fdef=CF|PF|AF|ZF|SF|OF fundef=PF|AF|ZF|SF"},
	{"mul %bx", "use={rax,rdx,rbx} partial={rax,rdx} fdef=CF|PF|AF|ZF|SF|OF fundef=PF|AF|ZF|SF"},
	{"mulq (%rsi)", "use={rax,rsi} def={rax,rdx} fdef=CF|PF|AF|ZF|SF|OF fundef=PF|AF|ZF|SF mem=[R 8 [rsi]]"},
	{"imul %rcx", "use={rax,rcx} def={rax,rdx} fdef=CF|PF|AF|ZF|SF|OF fundef=PF|AF|ZF|SF"},
	{"imul %rbx,%rax", "use={rax,rbx} def={rax} fdef=CF|PF|AF|ZF|SF|OF fundef=PF|AF|ZF|SF"},
	{"imul $10,%ebx,%eax", "use={rbx} def={rax} fdef=CF|PF|AF|ZF|SF|OF fundef=PF|AF|ZF|SF"},
	{"imul $3,(%rsi),%ecx", "use={rsi} def={rcx} fdef=CF|PF|AF|ZF|SF|OF fundef=PF|AF|ZF|SF mem=[R 4 [rsi]]"},
	{"div %ecx", "use={rax,rcx,rdx} def={rax,rdx} fdef=CF|PF|AF|ZF|SF|OF fundef=CF|PF|AF|ZF|SF|OF"},
	{"divb %cl", "use={rax,rcx} partial={rax} fdef=CF|PF|AF|ZF|SF|OF fundef=CF|PF|AF|ZF|SF|OF"},
	{"idivw (%rsi)", "use={rax,rdx,rsi} partial={rax,rdx} fdef=CF|PF|AF|ZF|SF|OF fundef=CF|PF|AF|ZF|SF|OF mem=[R 2 [rsi]]"},
	{"idiv %r8", "use={rax,rdx,r8} def={rax,rdx} fdef=CF|PF|AF|ZF|SF|OF fundef=CF|PF|AF|ZF|SF|OF"},
	{"cbtw", "use={rax} partial={rax}"},
	{"cwtl", "use={rax} def={rax}"},
	{"cltq", "use={rax} def={rax}"},
	{"cwtd", "use={rax,rdx} partial={rdx}"},
	{"cltd", "use={rax} def={rdx}"},
	{"cqto", "use={rax} def={rdx}"},
	{"seta %al", "use={rax} partial={rax} fuse=CF|ZF"},
	{"setge %ah", "use={rax} partial={rax} fuse=SF|OF"},
	{"setp (%rdi)", "use={rdi} fuse=PF mem=[W 1 [rdi]]"},
	{"setno %r8b", "use={r8} partial={r8} fuse=OF"},
	{"cmove %ebx,%eax", "use={rax,rbx} def={rax} fuse=ZF"},
	{"cmovl %rbx,%rax", "use={rax,rbx} partial={rax} fuse=SF|OF"},
	{"cmovbe %bx,%ax", "use={rax,rbx} partial={rax} fuse=CF|ZF"},
	{"cmovs (%rsi),%eax", "use={rax,rsi} def={rax} fuse=SF mem=[R 4 [rsi]]"},
	{"jo target", "fuse=OF ctrl=condjump"},
	{"jne target", "fuse=ZF ctrl=condjump"},
	{"jbe target", "fuse=CF|ZF ctrl=condjump"},
	{"jg target", "fuse=ZF|SF|OF ctrl=condjump"},
	{"jmp target", "ctrl=jump"},
	{"jmp *%rax", "use={rax} ctrl=indirectjump"},
	{"jmp *8(%rax,%rcx,8)", "use={rax,rcx} mem=[R 8 [rax+rcx*8+0x8]] ctrl=indirectjump"},
	{"notrack jmp *%rdx", "use={rdx} ctrl=indirectjump"},
	{"call target", "use={rsp} def={rsp} mem=[W 8 [rsp-0x8] implicit] ctrl=call"},
	{"call *%rax", "use={rax,rsp} def={rsp} mem=[W 8 [rsp-0x8] implicit] ctrl=indirectcall"},
	{"call *0x10(%rsp)", "use={rsp} def={rsp} mem=[R 8 [rsp+0x10]; W 8 [rsp-0x8] implicit] ctrl=indirectcall"},
	{"ret", "use={rsp} def={rsp} mem=[R 8 [rsp] implicit] ctrl=return"},
	{"ret $16", "use={rsp} def={rsp} mem=[R 8 [rsp] implicit] ctrl=return"},
	{"loop .", "use={rcx} def={rcx} ctrl=condjump"},
	{"loope .", "use={rcx} def={rcx} fuse=ZF ctrl=condjump"},
	{"loopne .", "use={rcx} def={rcx} fuse=ZF ctrl=condjump"},
	{"jrcxz .", "use={rcx} ctrl=condjump"},
	{"jecxz .", "use={rcx} ctrl=condjump"},
	{"xbegin target", "use={rax} partial={rax} ctrl=condjump"},
	{"xabort $0xff", "nothing"},
	{"xend", "nothing"},
	{"xtest", "fdef=CF|PF|AF|ZF|SF|OF"},
	{"push %rbx", "use={rbx,rsp} def={rsp} mem=[W 8 [rsp-0x8] implicit]"},
	{"push %r12", "use={rsp,r12} def={rsp} mem=[W 8 [rsp-0x8] implicit]"},
	{"push $100", "use={rsp} def={rsp} mem=[W 8 [rsp-0x8] implicit]"},
	{"pushq (%rdi)", "use={rsp,rdi} def={rsp} mem=[R 8 [rdi]; W 8 [rsp-0x8] implicit]"},
	{"pushq 8(%rsp)", "use={rsp} def={rsp} mem=[R 8 [rsp+0x8]; W 8 [rsp-0x8] implicit]"},
	{"pushw $1", "use={rsp} def={rsp} mem=[W 2 [rsp-0x2] implicit]"},
	{"push %fs", "use={rsp} def={rsp} mem=[W 8 [rsp-0x8] implicit]"},
	{"pop %rbx", "use={rsp} def={rbx,rsp} mem=[R 8 [rsp] implicit]"},
	{"pop %rsp", "use={rsp} def={rsp} mem=[R 8 [rsp] implicit]"},
	{"popq (%rdi)", "use={rsp,rdi} def={rsp} mem=[R 8 [rsp] implicit; W 8 [rdi]]"},
	{"popq 16(%rsp)", "use={rsp} def={rsp} mem=[R 8 [rsp] implicit; W 8 [rsp+0x18]]"},
	{"popw %ax", "use={rax,rsp} def={rsp} partial={rax} mem=[R 2 [rsp] implicit]"},
	{"pushf", "use={rsp} def={rsp} fuse=CF|PF|AF|ZF|SF|OF|DF mem=[W 8 [rsp-0x8] implicit]"},
	{"popf", "use={rsp} def={rsp} fdef=CF|PF|AF|ZF|SF|OF|DF mem=[R 8 [rsp] implicit]"},
	{"lahf", "use={rax} partial={rax} fuse=CF|PF|AF|ZF|SF"},
	{"sahf", "use={rax} fdef=CF|PF|AF|ZF|SF"},
	{"clc", "fdef=CF"},
	{"stc", "fdef=CF"},
	{"cmc", "fuse=CF fdef=CF"},
	{"cld", "fdef=DF"},
	{"std", "fdef=DF"},
	{"enter $32,$0", "use={rsp,rbp} def={rsp,rbp} mem=[W 8 [rsp-0x8] implicit]"},
	{"enter $32,$1", "use={rsp,rbp} def={rsp,rbp} mem=[W 16 [rsp-0x10] implicit]"},
	{"enter $32,$3", "use={rsp,rbp} def={rsp,rbp} mem=[W 32 [rsp-0x20] implicit; R 16 [rbp-0x10] implicit]"},
	{"leave", "use={rbp} def={rsp,rbp} mem=[R 8 [rbp] implicit]"},
	{"movsb", "use={rsi,rdi} def={rsi,rdi} fuse=DF mem=[R 1 [rsi] implicit; W 1 [rdi] implicit]"},
	{"movsw", "use={rsi,rdi} def={rsi,rdi} fuse=DF mem=[R 2 [rsi] implicit; W 2 [rdi] implicit]"},
	{"movsl", "use={rsi,rdi} def={rsi,rdi} fuse=DF mem=[R 4 [rsi] implicit; W 4 [rdi] implicit]"},
	{"movsq", "use={rsi,rdi} def={rsi,rdi} fuse=DF mem=[R 8 [rsi] implicit; W 8 [rdi] implicit]"},
	{"rep movsb", "use={rcx,rsi,rdi} def={rcx,rsi,rdi} fuse=DF mem=[R 0 [rsi] rep*1 implicit; W 0 [rdi] rep*1 implicit]"},
	{"rep movsq", "use={rcx,rsi,rdi} def={rcx,rsi,rdi} fuse=DF mem=[R 0 [rsi] rep*8 implicit; W 0 [rdi] rep*8 implicit]"},
	{"fs movsb", "use={rsi,rdi} def={rsi,rdi} fuse=DF mem=[R 1 fs:[rsi] implicit; W 1 [rdi] implicit]"},
	{"addr32 rep movsl", "use={rcx,rsi,rdi} partial={rcx,rsi,rdi} fuse=DF mem=[R 0 [esi] rep*4 implicit; W 0 [edi] rep*4 implicit]"},
	{"stosb", "use={rax,rdi} def={rdi} fuse=DF mem=[W 1 [rdi] implicit]"},
	{"rep stosq", "use={rax,rcx,rdi} def={rcx,rdi} fuse=DF mem=[W 0 [rdi] rep*8 implicit]"},
	{"lodsb", "use={rax,rsi} def={rsi} partial={rax} fuse=DF mem=[R 1 [rsi] implicit]"},
	{"lodsl", "use={rsi} def={rax,rsi} fuse=DF mem=[R 4 [rsi] implicit]"},
	{"rep lodsq", "use={rax,rcx,rsi} def={rcx,rsi} partial={rax} fuse=DF mem=[R 0 [rsi] rep*8 implicit]"},
	{"cmpsb", "use={rsi,rdi} def={rsi,rdi} fuse=DF fdef=CF|PF|AF|ZF|SF|OF mem=[R 1 [rsi] implicit; R 1 [rdi] implicit]"},
	{"repe cmpsq", "use={rcx,rsi,rdi} def={rcx,rsi,rdi} fuse=CF|PF|AF|ZF|SF|OF|DF fmay=CF|PF|AF|ZF|SF|OF fpass=CF|PF|AF|ZF|SF|OF mem=[R 0 [rsi] rep*8 implicit; R 0 [rdi] rep*8 implicit]"},
	{"scasw", "use={rax,rdi} def={rdi} fuse=DF fdef=CF|PF|AF|ZF|SF|OF mem=[R 2 [rdi] implicit]"},
	{"repne scasb", "use={rax,rcx,rdi} def={rcx,rdi} fuse=CF|PF|AF|ZF|SF|OF|DF fmay=CF|PF|AF|ZF|SF|OF fpass=CF|PF|AF|ZF|SF|OF mem=[R 0 [rdi] rep*1 implicit]"},
	{"xlat", "use={rax,rbx} partial={rax} mem=[R 1 [rbx+al] implicit]"},
	{"syscall", "use={rax,rdx,rsi,rdi,r8,r9,r10} def={rax,rcx,r11} fuse=CF|PF|AF|ZF|SF|OF|DF ctrl=syscall"},
	{"int $0x80", "use={rax,rcx,rdx,rbx,rsp,rbp,rsi,rdi,r8,r9,r10,r11,r12,r13,r14,r15} partial={rax,r8,r9,r10,r11} fuse=CF|PF|AF|ZF|SF|OF|DF ctrl=interrupt"},
	{"int3", "use={rax,rcx,rdx,rbx,rsp,rbp,rsi,rdi,r8,r9,r10,r11,r12,r13,r14,r15} fuse=CF|PF|AF|ZF|SF|OF|DF ctrl=interrupt"},
	{"int1", "use={rax,rcx,rdx,rbx,rsp,rbp,rsi,rdi,r8,r9,r10,r11,r12,r13,r14,r15} fuse=CF|PF|AF|ZF|SF|OF|DF ctrl=interrupt"},
	{"ud2", "ctrl=trap"},
	{"ud1 %eax,%ebx", "ctrl=trap"},
	{"hlt", "ctrl=trap"},
	{"cpuid", "use={rax,rcx} def={rax,rcx,rdx,rbx}"},
	{"rdtsc", "def={rax,rdx}"},
	{"rdtscp", "def={rax,rcx,rdx}"},
	{"rdpmc", "use={rcx} def={rax,rdx}"},
	{"xgetbv", "use={rcx} def={rax,rdx}"},
	{"rdrand %eax", "def={rax} fdef=CF|PF|AF|ZF|SF|OF"},
	{"rdrand %ax", "use={rax} partial={rax} fdef=CF|PF|AF|ZF|SF|OF"},
	{"rdseed %rcx", "def={rcx} fdef=CF|PF|AF|ZF|SF|OF"},
	{"rdpid %rax", "def={rax}"},
	{"rdfsbase %rax", "def={rax}"},
	{"wrfsbase %rdi", "use={rdi}"},
	{"rdgsbase %ecx", "def={rcx}"},
	{"rdpkru", "use={rcx} def={rax,rdx}"},
	{"wrpkru", "use={rax,rcx,rdx}"},
	{"endbr64", "nothing"},
	{"endbr32", "nothing"},
	{"rdsspq %rax", "use={rax} partial={rax}"},
	{"incsspq %rcx", "use={rcx}"},
	{"saveprevssp", "nothing"},
	{"rstorssp -8(%rsp)", "use={rsp} mem=[RW 8 [rsp-0x8]]"},
	{"nop", "nothing"},
	{"nopw 0x0(%rax,%rax,1)", "nothing"},
	{"nopl (%rax)", "nothing"},
	{"xchg %ax,%ax", "nothing"},
	{"pause", "nothing"},
	{"lfence", "nothing"},
	{"mfence", "nothing"},
	{"sfence", "nothing"},
	{"prefetcht0 (%rsi)", "use={rsi}"},
	{"prefetchnta 64(%rsi)", "use={rsi}"},
	{"prefetchw (%rdi)", "use={rdi}"},
	{"prefetch (%rdi)", "use={rdi}"},
	{"clflush (%rdi)", "use={rdi}"},
	{"clflushopt (%rdi)", "use={rdi}"},
	{"clwb (%rdi)", "use={rdi}"},
	{"cldemote (%rdi)", "use={rdi}"},
	{"xsave (%rsp)", "use={rax,rdx,rsp} mem=[RW 0 [rsp]]"},
	{"xsaveopt 64(%rsp)", "use={rax,rdx,rsp} mem=[RW 0 [rsp+0x40]]"},
	{"xsavec (%rdi)", "use={rax,rdx,rdi} mem=[RW 0 [rdi]]"},
	{"xsaves (%rdi)", "use={rax,rdx,rdi} mem=[RW 0 [rdi]]"},
	{"xrstor (%rsp)", "use={rax,rdx,rsp} mem=[R 0 [rsp]]"},
	{"xrstors (%rdi)", "use={rax,rdx,rdi} mem=[R 0 [rdi]]"},
	{"fxsave (%rdi)", "use={rdi} mem=[W 512 [rdi]]"},
	{"fxrstor64 (%rdi)", "use={rdi} mem=[R 512 [rdi]]"},
	{"adcx %rbx,%rax", "use={rax,rbx} def={rax} fuse=CF fdef=CF"},
	{"adox %ebx,%eax", "use={rax,rbx} def={rax} fuse=OF fdef=OF"},
	{"adcx (%rsi),%rax", "use={rax,rsi} def={rax} fuse=CF fdef=CF mem=[R 8 [rsi]]"},
	{"andn %ebx,%ecx,%eax", "use={rcx,rbx} def={rax} fdef=CF|PF|AF|ZF|SF|OF fundef=PF|AF"},
	{"bextr %rbx,(%rsi),%rax", "use={rbx,rsi} def={rax} fdef=CF|PF|AF|ZF|SF|OF fundef=PF|AF|SF mem=[R 8 [rsi]]"},
	{"blsi %eax,%ecx", "use={rax} def={rcx} fdef=CF|PF|AF|ZF|SF|OF fundef=PF|AF"},
	{"blsmsk %rax,%rcx", "use={rax} def={rcx} fdef=CF|PF|AF|ZF|SF|OF fundef=PF|AF"},
	{"blsr (%rdi),%eax", "use={rdi} def={rax} fdef=CF|PF|AF|ZF|SF|OF fundef=PF|AF mem=[R 4 [rdi]]"},
	{"bzhi %ebx,%ecx,%eax", "use={rcx,rbx} def={rax} fdef=CF|PF|AF|ZF|SF|OF fundef=PF|AF"},
	{"mulx %rbx,%rcx,%rax", "use={rdx,rbx} def={rax,rcx}"},
	{"mulx (%rsi),%rcx,%rax", "use={rdx,rsi} def={rax,rcx} mem=[R 8 [rsi]]"},
	{"pdep %rbx,%rcx,%rax", "use={rcx,rbx} def={rax}"},
	{"pext %ebx,%ecx,%eax", "use={rcx,rbx} def={rax}"},
	{"rorx $7,%ebx,%eax", "use={rbx} def={rax}"},
	{"sarx %ebx,%ecx,%eax", "use={rcx,rbx} def={rax}"},
	{"shlx %rbx,(%rsi),%rax", "use={rbx,rsi} def={rax} mem=[R 8 [rsi]]"},
	{"shrx %ebx,%ecx,%eax", "use={rcx,rbx} def={rax}"},
	{"movd %xmm0,%eax", "def={rax}"},
	{"movd %eax,%xmm1", "use={rax}"},
	{"movq %xmm0,%rax", "def={rax}"},
	{"movq %rax,%xmm1", "use={rax}"},
	{"movq (%rsi),%xmm1", "use={rsi} mem=[R 8 [rsi]]"},
	{"movq %xmm1,(%rdi)", "use={rdi} mem=[W 8 [rdi]]"},
	{"movd %mm0,%eax", "def={rax}"},
	{"pextrb $3,%xmm0,%eax", "def={rax}"},
	{"pextrw $1,%xmm0,%ecx", "def={rcx}"},
	{"pextrd $1,%xmm0,(%rdi)", "use={rdi} mem=[W 4 [rdi]]"},
	{"pextrq $1,%xmm0,%rax", "def={rax}"},
	{"pinsrb $1,(%rsi),%xmm0", "use={rsi} mem=[R 1 [rsi]]"},
	{"pinsrw $2,%eax,%xmm0", "use={rax}"},
	{"pinsrq $1,%rax,%xmm0", "use={rax}"},
	{"pmovmskb %xmm0,%eax", "def={rax}"},
	{"movmskps %xmm1,%ecx", "def={rcx}"},
	{"cvtsi2sd %eax,%xmm0", "use={rax}"},
	{"cvtsi2sdq (%rsi),%xmm0", "use={rsi} mem=[R 8 [rsi]]"},
	{"cvttsd2si %xmm0,%rax", "def={rax}"},
	{"cvtss2si (%rsi),%eax", "use={rsi} def={rax} mem=[R 4 [rsi]]"},
	{"comiss %xmm0,%xmm1", "fdef=CF|PF|AF|ZF|SF|OF"},
	{"ucomisd (%rsi),%xmm1", "use={rsi} fdef=CF|PF|AF|ZF|SF|OF mem=[R 8 [rsi]]"},
	{"ptest %xmm0,%xmm1", "fdef=CF|PF|AF|ZF|SF|OF"},
	{"pcmpistri $0x1a,(%rsi),%xmm0", "use={rsi} def={rcx} fdef=CF|PF|AF|ZF|SF|OF mem=[R 16 [rsi]]"},
	{"pcmpestri $0x1a,%xmm1,%xmm0", "use={rax,rdx} def={rcx} fdef=CF|PF|AF|ZF|SF|OF"},
	{"pcmpistrm $0x40,%xmm1,%xmm0", "fdef=CF|PF|AF|ZF|SF|OF"},
	{"pcmpestrm $0x40,(%rsi),%xmm0", "use={rax,rdx,rsi} fdef=CF|PF|AF|ZF|SF|OF mem=[R 16 [rsi]]"},
	{"movaps %xmm0,(%rsp)", "use={rsp} mem=[W 16 [rsp]]"},
	{"movups (%rsi),%xmm0", "use={rsi} mem=[R 16 [rsi]]"},
	{"movdqa 16(%rsp),%xmm1", "use={rsp} mem=[R 16 [rsp+0x10]]"},
	{"movss %xmm0,(%rdi)", "use={rdi} mem=[W 4 [rdi]]"},
	{"movsd (%rsi),%xmm0", "use={rsi} mem=[R 8 [rsi]]"},
	{"movhps %xmm0,8(%rdi)", "use={rdi} mem=[W 8 [rdi+0x8]]"},
	{"movlpd (%rsi),%xmm0", "use={rsi} mem=[R 8 [rsi]]"},
	{"movntdq %xmm0,(%rdi)", "use={rdi} mem=[W 16 [rdi]]"},
	{"movntdqa (%rsi),%xmm0", "use={rsi} mem=[R 16 [rsi]]"},
	{"lddqu (%rsi),%xmm0", "use={rsi} mem=[R 16 [rsi]]"},
	{"addps (%rsi),%xmm0", "use={rsi} mem=[R 16 [rsi]]"},
	{"pxor %xmm0,%xmm0", "nothing"},
	{"pshufb (%rsi),%xmm0", "use={rsi} mem=[R 16 [rsi]]"},
	{"aesenc (%rdi),%xmm0", "use={rdi} mem=[R 16 [rdi]]"},
	{"sha256rnds2 (%rsi),%xmm1", "use={rsi} mem=[R 16 [rsi]]"},
	{"pclmulqdq $0,(%rsi),%xmm0", "use={rsi} mem=[R 16 [rsi]]"},
	{"maskmovdqu %xmm1,%xmm0", "use={rdi} mem=[W 16 [rdi] masked implicit]"},
	{"ldmxcsr (%rsp)", "use={rsp} mem=[R 4 [rsp]]"},
	{"stmxcsr -4(%rsp)", "use={rsp} mem=[W 4 [rsp-0x4]]"},
	{"emms", "nothing"},
	{"vmovd %xmm0,%eax", "def={rax}"},
	{"vmovq %rax,%xmm0", "use={rax}"},
	{"vpextrb $5,%xmm0,%eax", "def={rax}"},
	{"vpextrq $1,%xmm0,(%rdi)", "use={rdi} mem=[W 8 [rdi]]"},
	{"vpinsrd $2,%eax,%xmm1,%xmm2", "use={rax}"},
	{"vpinsrw $2,(%rsi),%xmm1,%xmm2", "use={rsi} mem=[R 2 [rsi]]"},
	{"vpmovmskb %ymm0,%eax", "def={rax}"},
	{"vmovmskpd %ymm0,%ecx", "def={rcx}"},
	{"vcvttsd2si %xmm0,%rax", "def={rax}"},
	{"vcvtsi2ss %rax,%xmm1,%xmm2", "use={rax}"},
	{"vptest %ymm0,%ymm1", "fdef=CF|PF|AF|ZF|SF|OF"},
	{"vtestps (%rsi),%ymm1", "use={rsi} fdef=CF|PF|AF|ZF|SF|OF mem=[R 32 [rsi]]"},
	{"vucomiss %xmm0,%xmm1", "fdef=CF|PF|AF|ZF|SF|OF"},
	{"vcomisd (%rsi),%xmm1", "use={rsi} fdef=CF|PF|AF|ZF|SF|OF mem=[R 8 [rsi]]"},
	{"vpcmpistri $0x1a,(%rsi),%xmm0", "use={rsi} def={rcx} fdef=CF|PF|AF|ZF|SF|OF mem=[R 16 [rsi]]"},
	{"vpcmpestri $0x1a,%xmm1,%xmm0", "use={rax,rdx} def={rcx} fdef=CF|PF|AF|ZF|SF|OF"},
	{"vmovdqu (%rsi),%ymm0", "use={rsi} mem=[R 32 [rsi]]"},
	{"vmovdqu %ymm0,(%rdi)", "use={rdi} mem=[W 32 [rdi]]"},
	{"vmovdqa %ymm0,32(%rsp)", "use={rsp} mem=[W 32 [rsp+0x20]]"},
	{"vpbroadcastb (%rsi),%ymm0", "use={rsi} mem=[R 1 [rsi]]"},
	{"vpbroadcastd %xmm0,%ymm1", "nothing"},
	{"vbroadcastss (%rsi),%ymm0", "use={rsi} mem=[R 4 [rsi]]"},
	{"vpmovzxbd (%rsi),%ymm0", "use={rsi} mem=[R 8 [rsi]]"},
	{"vpcmpeqb (%rdi),%ymm0,%ymm1", "use={rdi} mem=[R 32 [rdi]]"},
	{"vpaddd (%rsi),%ymm1,%ymm2", "use={rsi} mem=[R 32 [rsi]]"},
	{"vfmadd231ps (%rsi),%ymm1,%ymm2", "use={rsi} mem=[R 32 [rsi]]"},
	{"vfmadd213sd 8(%rsi),%xmm1,%xmm2", "use={rsi} mem=[R 8 [rsi+0x8]]"},
	{"vextracti128 $1,%ymm0,(%rdi)", "use={rdi} mem=[W 16 [rdi]]"},
	{"vinserti128 $1,(%rsi),%ymm0,%ymm1", "use={rsi} mem=[R 16 [rsi]]"},
	{"vperm2i128 $1,(%rsi),%ymm0,%ymm1", "use={rsi} mem=[R 32 [rsi]]"},
	{"vmaskmovps %ymm0,%ymm1,(%rdi)", "use={rdi} mem=[W 32 [rdi] masked]"},
	{"vmaskmovpd (%rsi),%ymm1,%ymm0", "use={rsi} mem=[R 32 [rsi] masked]"},
	{"vpmaskmovd %ymm0,%ymm1,(%rdi)", "use={rdi} mem=[W 32 [rdi] masked]"},
	{"vpmaskmovq (%rsi),%ymm1,%ymm0", "use={rsi} mem=[R 32 [rsi] masked]"},
	{"vmaskmovdqu %xmm1,%xmm0", "use={rdi} mem=[W 16 [rdi] masked implicit]"},
	{"vpgatherdd %ymm2,(%rax,%ymm1,4),%ymm0", "use={rax} mem=[R 32 [rax+y1*4] vsib*4 masked]"},
	{"vgatherqpd %ymm2,8(%rax,%ymm1,8),%ymm0", "use={rax} mem=[R 32 [rax+y1*8+0x8] vsib*8 masked]"},
	{"vpgatherqd %xmm2,(%rax,%ymm1,4),%xmm0", "use={rax} mem=[R 16 [rax+y1*4] vsib*4 masked]"},
	{"vzeroupper", "nothing"},
	{"vzeroall", "nothing"},
	{"vldmxcsr (%rsi)", "use={rsi} mem=[R 4 [rsi]]"},
	{"vstmxcsr (%rdi)", "use={rdi} mem=[W 4 [rdi]]"},
	{"vcvtps2ph $0,%ymm0,(%rdi)", "use={rdi} mem=[W 16 [rdi]]"},
	{"ds vmovdqu (%rsi),%ymm0", "use={rsi} mem=[R 32 [rsi]]"},
	{"addr32 vmovdqu (%esi),%ymm0", "use={rsi} mem=[R 32 [esi]]"},
	{"fs vmovdqu 16(%rsi),%ymm0", "use={rsi} mem=[R 32 fs:[rsi+0x10]]"},
	{"cs vpcmpeqb (%rdi),%ymm0,%ymm1", "use={rdi} mem=[R 32 [rdi]]"},
	{"vmovdqu64 (%rsi),%zmm0", "use={rsi} mem=[R 64 [rsi]]"},
	{"vmovdqu64 %zmm0,(%rdi)", "use={rdi} mem=[W 64 [rdi]]"},
	{"vmovdqu8 (%rsi),%zmm0{%k1}{z}", "use={rsi} mem=[R 64 [rsi] masked]"},
	{"vmovdqu8 %zmm0,(%rdi){%k1}", "use={rdi} mem=[W 64 [rdi] masked]"},
	{"vmovups %zmm0,64(%rdi){%k2}", "use={rdi} mem=[W 64 [rdi+0x40] masked]"},
	{"vpcmpeqb (%rdi),%zmm0,%k1", "use={rdi} mem=[R 64 [rdi]]"},
	{"vpcmpeqb 64(%rdi),%zmm0,%k1{%k2}", "use={rdi} mem=[R 64 [rdi+0x40] masked]"},
	{"vpaddd (%rsi){1to16},%zmm1,%zmm2", "use={rsi} mem=[R 4 [rsi]]"},
	{"vpternlogd $0xff,%zmm0,%zmm0,%zmm0", "nothing"},
	{"vpcompressd %zmm0,(%rdi){%k1}", "use={rdi} mem=[W 64 [rdi] masked]"},
	{"vpexpandd (%rsi),%zmm0{%k1}", "use={rsi} mem=[R 64 [rsi] masked]"},
	{"vpgatherdd (%rax,%zmm1,4),%zmm0{%k1}", "use={rax} mem=[R 64 [rax+z1*4] vsib*4 masked]"},
	{"vpscatterdd %zmm0,(%rax,%zmm1,4){%k1}", "use={rax} mem=[W 64 [rax+z1*4] vsib*4 masked]"},
	{"vscatterqpd %zmm0,8(%rax,%zmm1,8){%k1}", "use={rax} mem=[W 64 [rax+z1*8+0x8] vsib*8 masked]"},
	{"vgatherpf0dps (%rax,%zmm1,4){%k1}", "use={rax}"},
	{"kmovw %k1,%eax", "def={rax}"},
	{"kmovq %rax,%k1", "use={rax}"},
	{"kmovd (%rsi),%k1", "use={rsi} mem=[R 4 [rsi]]"},
	{"kmovb %k1,(%rdi)", "use={rdi} mem=[W 1 [rdi]]"},
	{"kortestw %k1,%k2", "fdef=CF|PF|AF|ZF|SF|OF"},
	{"kortestq %k1,%k1", "fdef=CF|PF|AF|ZF|SF|OF"},
	{"ktestd %k1,%k2", "fdef=CF|PF|AF|ZF|SF|OF"},
	{"kandw %k1,%k2,%k3", "nothing"},
	{"vpbroadcastd %eax,%zmm0", "use={rax}"},
	{"vpbroadcastq %rax,%zmm0", "use={rax}"},
	{"vcvtsd2usi %xmm0,%rax", "def={rax}"},
	{"vcvtusi2sd %eax,%xmm1,%xmm2", "use={rax}"},
	{"vpextrd $1,%xmm16,%eax", "def={rax}"},
	{"vmovq %xmm17,%rax", "def={rax}"},
	{"vpmovqd %zmm0,(%rdi)", "use={rdi} mem=[W 32 [rdi]]"},
	{"vpmovm2b %k1,%zmm0", "nothing"},
	{"vpmovb2m %zmm0,%k1", "nothing"},
	{"vptestmb %zmm0,%zmm1,%k1", "nothing"},
	{"fldl (%rsi)", "use={rsi} mem=[R 8 [rsi]]"},
	{"flds 4(%rsi)", "use={rsi} mem=[R 4 [rsi+0x4]]"},
	{"fldt (%rsi)", "use={rsi} mem=[R 10 [rsi]]"},
	{"fildll (%rsi)", "use={rsi} mem=[R 8 [rsi]]"},
	{"filds (%rsi)", "use={rsi} mem=[R 2 [rsi]]"},
	{"fstpl (%rdi)", "use={rdi} mem=[W 8 [rdi]]"},
	{"fstpt (%rdi)", "use={rdi} mem=[W 10 [rdi]]"},
	{"fistpll (%rdi)", "use={rdi} mem=[W 8 [rdi]]"},
	{"fisttpl (%rdi)", "use={rdi} mem=[W 4 [rdi]]"},
	{"faddl (%rsi)", "use={rsi} mem=[R 8 [rsi]]"},
	{"fmuls (%rsi)", "use={rsi} mem=[R 4 [rsi]]"},
	{"fcompl (%rsi)", "use={rsi} mem=[R 8 [rsi]]"},
	{"fidivl (%rsi)", "use={rsi} mem=[R 4 [rsi]]"},
	{"fld %st(1)", "nothing"},
	{"fxch %st(1)", "nothing"},
	{"faddp %st,%st(1)", "nothing"},
	{"fucomip %st(1),%st", "fdef=CF|PF|AF|ZF|SF|OF"},
	{"fcomi %st(1),%st", "fdef=CF|PF|AF|ZF|SF|OF"},
	{"fcmovbe %st(1),%st", "fuse=CF|ZF"},
	{"fcmovnu %st(1),%st", "fuse=PF"},
	{"fnstsw %ax", "use={rax} partial={rax}"},
	{"fnstsw (%rdi)", "use={rdi} mem=[W 2 [rdi]]"},
	{"fnstcw -2(%rsp)", "use={rsp} mem=[W 2 [rsp-0x2]]"},
	{"fldcw -2(%rsp)", "use={rsp} mem=[R 2 [rsp-0x2]]"},
	{"fnstenv (%rdi)", "use={rdi} mem=[W 28 [rdi]]"},
	{"fldenv (%rsi)", "use={rsi} mem=[R 28 [rsi]]"},
	{"fnsave (%rdi)", "use={rdi} mem=[W 108 [rdi]]"},
	{"frstor (%rsi)", "use={rsi} mem=[R 108 [rsi]]"},
	{"fbld (%rsi)", "use={rsi} mem=[R 10 [rsi]]"},
	{"fbstp (%rdi)", "use={rdi} mem=[W 10 [rdi]]"},
	{"fninit", "nothing"},
	{"fwait", "nothing"},
	{"wrssq %rax,(%rdi)", "unknown"},
	{"movdiri %eax,(%rdi)", "unknown"},
	{"movdir64b (%rsi),%rdi", "unknown"},
	{"umonitor %rax", "unknown"},
	{"tpause %eax", "unknown"},
	{"lcall *(%rax)", "unknown mem=[RW 6 [rax]] ctrl=indirectcall"},
	{"ljmp *(%rax)", "unknown mem=[RW 6 [rax]] ctrl=indirectjump"},
	{"lretq", "unknown ctrl=return"},
	{"iretq", "unknown ctrl=return"},
	{"in (%dx),%al", "unknown"},
	{"out %al,(%dx)", "unknown"},
	{"insb", "unknown mem=[RW 0 [rdi]]"},
	{"outsb", "unknown mem=[RW 0 [rsi]]"},
	{"cli", "unknown"},
	{"sti", "unknown"},
	{"sysenter", "unknown"},
	{"rdmsr", "unknown"},
	{"lgdt (%rax)", "unknown mem=[RW 0 [rax]]"},
	{"invlpg (%rax)", "unknown mem=[RW 0 [rax]]"},
	{"lsl %ax,%bx", "unknown"},
	{"vprotd $3,%xmm1,%xmm0", "unknown"},
	{"vpperm %xmm3,%xmm2,%xmm1,%xmm0", "unknown"},
	{"femms", "nothing"},
}

// decode assembles lines and decodes each as one instruction.
func decodeLines(t *testing.T, lines []string) ([]x86len.Layout, []x86asm.Inst, [][]byte) {
	t.Helper()
	codes := assemble(t, lines)
	lays := make([]x86len.Layout, len(lines))
	insts := make([]x86asm.Inst, len(lines))
	for i, b := range codes {
		lay, inst, err := ibr.Decode(b)
		if err != nil || int(lay.Len) != len(b) {
			t.Fatalf("%s: [% x] is not one instruction: %v", lines[i], b, err)
		}
		lays[i], insts[i] = lay, inst
	}
	return lays, insts, codes
}

func TestEffects(t *testing.T) {
	lines := make([]string, len(effectCases))
	for i, c := range effectCases {
		lines[i] = c.asm
	}
	lays, insts, codes := decodeLines(t, lines)
	for i, c := range effectCases {
		e := Of(&insts[i], &lays[i], codes[i])
		if got := e.String(); got != c.want {
			t.Errorf("%s [% x]:\n got  %s\n want %s", c.asm, codes[i], got, c.want)
		}
		if msg := checkInvariants(&e); msg != "" {
			t.Errorf("%s: %s", c.asm, msg)
		}
	}
}

// TestAccessFields checks the fields String does not show in full.
func TestAccessFields(t *testing.T) {
	lines := []string{
		"add %eax,8(%rbx)",                      // 0: explicit, Arg 0 in Intel order
		"add 8(%rbx),%eax",                      // 1: Arg 1
		"pushq (%rdi)",                          // 2: explicit read, implicit write
		"rep movsw",                             // 3: rep, elem 2
		"xlat",                                  // 4: [rbx+al]
		"vpgatherdq %ymm2,(%rax,%xmm1,8),%ymm0", // 5: VSIB
		"bt %rcx,(%rdx)",                        // 6: bit offset
		"mov %fs:0x28,%rax",                     // 7: FS segment
		"ds mov (%rax),%ecx",                    // 8: DS dropped
		"lea 0x10(%rip),%rax",                   // 9: no access
		"mov 0x10(%rip),%rax",                   // 10: RIP base
		"addr32 rep stosb",                      // 11: 32-bit addressing
		"fs lodsb",                              // 12: source segment override
		"fs stosb",                              // 13: the destination segment is always ES
	}
	lays, insts, codes := decodeLines(t, lines)
	eff := func(i int) Effect { return Of(&insts[i], &lays[i], codes[i]) }
	check := func(i int, k int, want Access) {
		t.Helper()
		e := eff(i)
		if k >= e.NMem {
			t.Errorf("%s: no access %d (%v)", lines[i], k, e)
			return
		}
		if got := e.Mem[k]; got != want {
			t.Errorf("%s: access %d\n got  %+v\n want %+v", lines[i], k, got, want)
		}
	}
	m := func(base x86asm.Reg, disp int64) x86asm.Mem { return x86asm.Mem{Base: base, Disp: disp} }
	check(0, 0, Access{Arg: 0, Mem: m(x86asm.RBX, 8), Size: 4, Read: true, Write: true})
	check(1, 0, Access{Arg: 1, Mem: m(x86asm.RBX, 8), Size: 4, Read: true})
	check(2, 0, Access{Arg: 0, Mem: m(x86asm.RDI, 0), Size: 8, Read: true})
	check(2, 1, Access{Arg: -1, Mem: m(x86asm.RSP, -8), Size: 8, Write: true})
	check(3, 0, Access{Arg: -1, Mem: m(x86asm.RSI, 0), Read: true, Rep: true, Elem: 2})
	check(3, 1, Access{Arg: -1, Mem: m(x86asm.RDI, 0), Write: true, Rep: true, Elem: 2})
	check(4, 0, Access{Arg: -1, Mem: x86asm.Mem{Base: x86asm.RBX, Index: x86asm.AL, Scale: 1}, Size: 1, Read: true})
	check(5, 0, Access{Arg: 1, Mem: x86asm.Mem{Base: x86asm.RAX, Index: x86asm.X1, Scale: 8}, Size: 32, Read: true, VSIB: true, Elem: 8, Masked: true})
	check(6, 0, Access{Arg: 0, Mem: m(x86asm.RDX, 0), Size: 8, Read: true, BitOffset: true})
	check(7, 0, Access{Arg: 1, Mem: x86asm.Mem{Segment: x86asm.FS, Disp: 0x28}, Size: 8, Read: true})
	check(8, 0, Access{Arg: 1, Mem: m(x86asm.RAX, 0), Size: 4, Read: true})
	if e := eff(9); e.NMem != 0 || e.Use != 0 || e.Def != RAX.Set() {
		t.Errorf("lea: %v", e)
	}
	check(10, 0, Access{Arg: 1, Mem: m(x86asm.RIP, 0x10), Size: 8, Read: true})
	check(11, 0, Access{Arg: -1, Mem: m(x86asm.EDI, 0), Write: true, Rep: true, Elem: 1})
	check(12, 0, Access{Arg: -1, Mem: x86asm.Mem{Segment: x86asm.FS, Base: x86asm.RSI}, Size: 1, Read: true, Elem: 1})
	check(13, 0, Access{Arg: -1, Mem: m(x86asm.RDI, 0), Size: 1, Write: true, Elem: 1})
}

// TestPrefixOnly covers ibr's Prefix elements: legacy prefixes split off
// an instruction that a branch enters after them.
func TestPrefixOnly(t *testing.T) {
	for _, c := range []struct {
		raw   []byte
		known bool
	}{
		{[]byte{0xf0}, true},
		{[]byte{0x3e}, true},
		{[]byte{0x2e, 0xf0}, true},
		{[]byte{0xf3}, false},
		{[]byte{0xf2}, false},
		{[]byte{0x66}, false},
		{[]byte{0x67}, false},
		{[]byte{0x64}, false},
	} {
		n := len(c.raw)
		lay := x86len.Layout{Len: int8(n), Prefixes: int8(n), OpcodeOff: int8(n), ModRMOff: -1, SIBOff: -1, SuffixOff: -1}
		e := Of(&x86asm.Inst{}, &lay, c.raw)
		if e.Known != c.known {
			t.Errorf("% x: Known=%v, want %v (%v)", c.raw, e.Known, c.known, e)
		}
		if c.known && (e.Use != 0 || e.Def != 0 || e.NMem != 0 || e.FlagsUse != 0 || e.FlagsDef != 0) {
			t.Errorf("% x: %v, want nothing", c.raw, e)
		}
		if msg := checkInvariants(&e); msg != "" {
			t.Errorf("% x: %s", c.raw, msg)
		}
	}
}

// TestUnknownConservative checks what Of reports for what it cannot
// model, including malformed input.
func TestUnknownConservative(t *testing.T) {
	lays, insts, codes := decodeLines(t, []string{"in %dx,%al", "lgdt (%rax)", "vprotd $3,%xmm1,%xmm0", "vpperm (%rax),%xmm2,%xmm1,%xmm0"})
	for i := range codes {
		e := Of(&insts[i], &lays[i], codes[i])
		if e.Known || e.Use != AllRegs || e.Partial != AllRegs || e.Def != 0 || e.FlagsUse != AllFlags ||
			e.FlagsMay != AllFlags || e.FlagsDef != 0 {
			t.Errorf("[% x]: %+v", codes[i], e)
		}
	}
	// The XOP instruction with a memory operand reports it.
	if e := Of(&insts[3], &lays[3], codes[3]); e.NMem != 1 || e.Mem[0].Mem.Base != x86asm.RAX || !e.Mem[0].Read || !e.Mem[0].Write {
		t.Errorf("vpperm (%%rax): %v", e)
	}
	// Malformed calls.
	var inst x86asm.Inst
	for _, lay := range []x86len.Layout{{}, {Len: 3}, {Len: 1, Prefixes: 2}} {
		e := Of(&inst, &lay, []byte{0x90})
		if e.Known || e.Use != AllRegs {
			t.Errorf("%v: %v", lay, e)
		}
	}
}

// TestFlagsForConditions checks the flags read by every condition code.
func TestFlagsForConditions(t *testing.T) {
	want := map[string]Flags{"o": OF, "no": OF, "b": CF, "ae": CF, "e": ZF, "ne": ZF, "be": CF | ZF, "a": CF | ZF,
		"s": SF, "ns": SF, "p": PF, "np": PF, "l": SF | OF, "ge": SF | OF, "le": ZF | SF | OF, "g": ZF | SF | OF}
	var lines []string
	var flags []Flags
	for cc, f := range want {
		lines = append(lines, "j"+cc+" target", "set"+cc+" %al", "cmov"+cc+" %ecx,%eax")
		flags = append(flags, f, f, f)
	}
	lays, insts, codes := decodeLines(t, lines)
	for i := range lines {
		e := Of(&insts[i], &lays[i], codes[i])
		if e.FlagsUse != flags[i] || e.FlagsDef != 0 {
			t.Errorf("%s: %v, want fuse=%v", lines[i], e, flags[i])
		}
	}
}

// TestNoAlloc checks that Of does not allocate.
func TestNoAlloc(t *testing.T) {
	lays, insts, codes := decodeLines(t, []string{"add %eax,8(%rbx)", "rep movsb", "pushq (%rdi)", "vpgatherdd %ymm2,(%rax,%ymm1,4),%ymm0",
		"adcx %rax,%rbx", "endbr64", "shl %cl,%rax", "call *%rax", "vmovdqu8 %zmm0,(%rdi){%k1}", "lock cmpxchg %rcx,(%rdi)"})
	var sink Effect
	allocs := testing.AllocsPerRun(100, func() {
		for i := range codes {
			sink = Of(&insts[i], &lays[i], codes[i])
		}
	})
	if allocs != 0 {
		t.Errorf("Of allocates %.1f times per %d instructions", allocs, len(codes))
	}
	_ = sink
}

func TestStrings(t *testing.T) {
	if s := (CF | ZF | DF).String(); s != "CF|ZF|DF" {
		t.Errorf("flags: %s", s)
	}
	if s := Flags(0).String(); s != "-" {
		t.Errorf("no flags: %s", s)
	}
	if s := (RAX.Set() | R15.Set() | RSP.Set()).String(); s != "{rax,rsp,r15}" {
		t.Errorf("regs: %s", s)
	}
	if s := CondJump.String(); s != "condjump" {
		t.Errorf("control: %s", s)
	}
	for c, ft := range map[Control]bool{None: true, Jump: false, CondJump: true, IndirectJump: false, Call: true,
		IndirectCall: true, Return: false, Syscall: true, Interrupt: true, Trap: false} {
		if c.FallsThrough() != ft {
			t.Errorf("%v.FallsThrough() = %v", c, !ft)
		}
	}
	if s := (Effect{Known: true}).String(); s != "nothing" {
		t.Errorf("empty effect: %s", s)
	}
	if !strings.HasPrefix((Effect{}).String(), "unknown") {
		t.Errorf("unknown effect: %s", Effect{})
	}
}

func TestGPR(t *testing.T) {
	for _, c := range []struct {
		r     x86asm.Reg
		reg   Reg
		width int
	}{
		{x86asm.AL, RAX, 1}, {x86asm.AH, RAX, 1}, {x86asm.BH, RBX, 1}, {x86asm.SPB, RSP, 1}, {x86asm.DIB, RDI, 1},
		{x86asm.R8B, R8, 1}, {x86asm.R15B, R15, 1}, {x86asm.AX, RAX, 2}, {x86asm.R9W, R9, 2}, {x86asm.ESI, RSI, 4},
		{x86asm.R12L, R12, 4}, {x86asm.RSP, RSP, 8}, {x86asm.R15, R15, 8},
	} {
		reg, w, ok := GPR(c.r)
		if !ok || reg != c.reg || w != c.width {
			t.Errorf("GPR(%v) = %v, %d, %v", c.r, reg, w, ok)
		}
	}
	for _, r := range []x86asm.Reg{0, x86asm.RIP, x86asm.EIP, x86asm.FS, x86asm.X0, x86asm.K1, x86asm.F0, x86asm.M0} {
		if _, _, ok := GPR(r); ok {
			t.Errorf("GPR(%v) ok", r)
		}
	}
}

func TestLiveIn(t *testing.T) {
	lays, insts, codes := decodeLines(t, []string{"add %ebx,%eax", "mov %ebx,%eax", "mov %bl,%al", "cmp %ecx,%edx", "adc $0,%eax"})
	eff := func(i int) Effect { return Of(&insts[i], &lays[i], codes[i]) }
	out := RAX.Set() | RSI.Set()
	for i, want := range []RegSet{RAX.Set() | RBX.Set() | RSI.Set(), RBX.Set() | RSI.Set(), RAX.Set() | RBX.Set() | RSI.Set(),
		RAX.Set() | RCX.Set() | RDX.Set() | RSI.Set(), RAX.Set() | RSI.Set()} {
		e := eff(i)
		if got := e.LiveIn(out); got != want {
			t.Errorf("%d: LiveIn = %v, want %v", i, got, want)
		}
	}
	e := eff(3)
	if got := e.FlagsLiveIn(ZF | DF); got != DF {
		t.Errorf("cmp: FlagsLiveIn = %v", got)
	}
	e = eff(4)
	if got := e.FlagsLiveIn(ZF); got != CF {
		t.Errorf("adc: FlagsLiveIn = %v", got)
	}
}
