package dataset

import "time"

// The tables' rows. Every table has the run as its hive partition column
// (the directory run=NAME, not a column of the files) and the pid of the
// process, so that rows of different runs and processes never mix. Times
// are nanoseconds since the trace started (int64), page and code addresses
// uint64, counts int64. docs/parquet.md documents each column.

// PageRow is a row of the pages table: what one thread did to one page in
// one interval of the trace (an AGG chunk's record of the page; the events
// of a RAW chunk on the page), while one owner held it.
type PageRow struct {
	PID           int32  `parquet:"pid"`
	Thread        int32  `parquet:"thread"`            // kernel TID
	Serial        int64  `parquet:"serial"`            // the runtime's thread serial: TIDs are reused
	ThreadName    string `parquet:"thread_name,dict"`  // at the thread's first event (at exit if it had none)
	IntervalStart int64  `parquet:"interval_start_ns"` // the chunk's interval
	IntervalEnd   int64  `parquet:"interval_end_ns"`   //
	Page          uint64 `parquet:"page,delta"`        // the page's address (a multiple of the page size)
	Reads         int64  `parquet:"reads"`             // events at read and read-modify-write sites
	Writes        int64  `parquet:"writes"`            // events at write and read-modify-write sites
	Events        int64  `parquet:"events"`            //
	First         int64  `parquet:"first_ns"`          // the page's first and last event in the interval
	Last          int64  `parquet:"last_ns"`           //
	Sites         int32  `parquet:"sites"`             // distinct sites with events on the page in the interval
	TopSite       uint64 `parquet:"top_site"`          // the site with the most events: sites.site
	TopFunction   string `parquet:"top_function,dict"` // its function ("" if no object holds it)
	TopInsn       int64  `parquet:"top_insn"`          // its instruction's offset in the function
	TopSymbol     string `parquet:"top_symbol,dict"`   // the variable the sites name with the most events
	Object        string `parquet:"object,dict"`       // the top site's object file
	Segment       string `parquet:"segment,dict"`      // global heap stack tls mmap lib unknown
	Owner         string `parquet:"owner,dict"`        // what the page held (hijack help report)
}

// ThreadRow is a row of the threads table: one thread (runtime serial) of
// a process.
type ThreadRow struct {
	PID     int32  `parquet:"pid"`
	Thread  int32  `parquet:"thread"`
	Serial  int64  `parquet:"serial"`
	Name    string `parquet:"name"`
	Start   int64  `parquet:"start_ns"`          // its first event
	Exit    *int64 `parquet:"exit_ns,optional"`  // null: it did not exit while traced
	Counted int64  `parquet:"counted_events"`    // the events the runtime counted (at exit)
	Drops   int64  `parquet:"drops"`             // the events it dropped
	Rows    int64  `parquet:"page_rows"`         // its rows in pages
	Events  int64  `parquet:"events"`            // sums over those rows
	Reads   int64  `parquet:"reads"`             //
	Writes  int64  `parquet:"writes"`            //
	First   *int64 `parquet:"first_ns,optional"` // its first and last page event (null: none)
	Last    *int64 `parquet:"last_ns,optional"`  //
}

// SiteRow is a row of the sites table: one instrumented instruction
// (struct vpt_site) of an object of the process.
type SiteRow struct {
	PID       int32   `parquet:"pid"`
	Site      uint64  `parquet:"site"` // its runtime address: pages.top_site
	Object    string  `parquet:"object,dict"`
	ObjectID  uint64  `parquet:"object_id"`
	Index     int32   `parquet:"index"`
	Function  string  `parquet:"function,dict"`
	Offset    int64   `parquet:"offset"`        // the instruction's offset in the function (original object)
	Kind      string  `parquet:"kind,dict"`     // read, write, rmw [,exact,rep-src,...]
	KindBits  int32   `parquet:"kind_bits"`     // vpt_site.kind
	Segment   string  `parquet:"segment,dict"`  // what the operand's form says: global stack tls unknown
	Symbol    string  `parquet:"symbol,dict"`   // the variable a relocation names ("" none)
	SymbolOff int32   `parquet:"symbol_offset"` //
	Size      int32   `parquet:"size"`          // access size in bytes
	Covers    int32   `parquet:"covers"`        // accesses of its block it stands for
	Score     float64 `parquet:"score"`         // its block's loop score
}

// AllocRow is a row of the allocations table: one allocation site, every
// heap block or mapping one call site of one allocator returned.
type AllocRow struct {
	PID       int32  `parquet:"pid"`
	Site      string `parquet:"site"` // FUNC+0xOFF of the return address
	Line      string `parquet:"line"` // file:line of the call ("" without DWARF)
	Allocator string `parquet:"allocator,dict"`
	Address   uint64 `parquet:"address"` // the return address
	Owner     string `parquet:"owner"`   // ALLOCATOR@SITE: pages.owner of its blocks (of a file mapping's pages: the path)
	Count     int64  `parquet:"count"`   // blocks (mappings) returned
	Bytes     int64  `parquet:"bytes"`   // asked for, in all
	Pages     int64  `parquet:"pages"`   // distinct pages of its blocks the threads touched
	Events    int64  `parquet:"events"`  // events on them while its blocks held them
	First     int64  `parquet:"first_ns"`
	Last      int64  `parquet:"last_ns"`
}

// RegionRow is a row of the regions table: one heap block, mapping, stack
// or TLS block with its lifetime.
type RegionRow struct {
	PID       int32  `parquet:"pid"`
	Kind      string `parquet:"kind,dict"` // heap mmap stack tls
	Start     uint64 `parquet:"start"`     // [start, end)
	End       uint64 `parquet:"end"`
	Bytes     int64  `parquet:"bytes"`
	Born      int64  `parquet:"born_ns"`
	Died      *int64 `parquet:"died_ns,optional"` // null: alive at the end
	Allocator string `parquet:"allocator,dict"`   // heap, mmap
	Address   uint64 `parquet:"address"`          // return address of the allocating call
	Thread    int32  `parquet:"thread"`           // the allocating thread; a stack's or TLS block's
	Path      string `parquet:"path"`             // a file mapping's
	Owner     string `parquet:"owner"`            // pages.owner while it held them
}

// NoteRow is a row of the notes table.
type NoteRow struct {
	PID    int32  `parquet:"pid"`
	Time   int64  `parquet:"time_ns"`
	Kind   string `parquet:"kind,dict"` // note start stop warning fork exec exec-failed
	Thread int32  `parquet:"thread"`
	Value  int64  `parquet:"value"`
	Text   string `parquet:"text"`
}

// RunRow is the one row of the runs table of a run: the process and its
// trace file.
type RunRow struct {
	Path        string    `parquet:"path"`
	PID         int32     `parquet:"pid"`
	PPID        int32     `parquet:"ppid"`
	ForkChild   bool      `parquet:"fork_child"`
	Program     string    `parquet:"program"`
	Exe         string    `parquet:"exe"`
	Cmdline     []string  `parquet:"cmdline,list"`
	Start       time.Time `parquet:"start,timestamp(nanosecond)"`
	Duration    int64     `parquet:"duration_ns"`
	Format      string    `parquet:"format"` // the trace format version, "1.3"
	IntervalMS  int32     `parquet:"interval_ms"`
	ClockRes    int64     `parquet:"clock_res_ns"`
	Complete    bool      `parquet:"complete"`
	Status      string    `parquet:"status"`
	Warnings    []string  `parquet:"warnings,list"`
	Exec        string    `parquet:"exec"` // the program the image exec'd
	Objects     int32     `parquet:"objects"`
	Threads     int32     `parquet:"threads"`
	PageRows    int64     `parquet:"page_rows"`
	Events      int64     `parquet:"events"`
	Drops       int64     `parquet:"drops"`
	AllocEvents int64     `parquet:"allocation_events"`
	AllocsLost  int64     `parquet:"allocation_events_lost"`
}
