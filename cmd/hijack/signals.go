package main

import (
	"os"
	"os/signal"
	"sync"
	"syscall"

	"hijack/internal/atomicfile"
)

// tempDirs are the temporary directories a command made (hijack cc's
// objects): removed when it returns, and when a signal ends it.
type tempDirs struct {
	mu   sync.Mutex
	dirs map[string]bool
}

func (t *tempDirs) make() (string, error) {
	dir, err := os.MkdirTemp("", "hijack-cc-")
	if err == nil {
		t.mu.Lock()
		if t.dirs == nil {
			t.dirs = map[string]bool{}
		}
		t.dirs[dir] = true
		t.mu.Unlock()
	}
	return dir, err
}

func (t *tempDirs) remove(dir string) {
	os.RemoveAll(dir)
	t.mu.Lock()
	delete(t.dirs, dir)
	t.mu.Unlock()
}

func (t *tempDirs) removeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for d := range t.dirs {
		os.RemoveAll(d)
	}
	t.dirs = nil
}

// removeOnSignal arranges that SIGINT, SIGTERM or SIGHUP, which end the
// command, first remove the temporary files of writes in progress and the
// directories in t, and then end it by the same signal (so that make and
// shells see what happened). The returned function undoes it.
func removeOnSignal(t *tempDirs) (stop func()) {
	sigs := make(chan os.Signal, 1)
	done := make(chan struct{})
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		select {
		case s := <-sigs:
			atomicfile.RemoveTemporaries()
			t.removeAll()
			signal.Reset(s)
			syscall.Kill(os.Getpid(), s.(syscall.Signal))
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}

// lazySignals is removeOnSignal (with no directories) armed on the first
// call of arm, for commands that may never need it.
type lazySignals struct{ undo func() }

func (l *lazySignals) arm() {
	if l.undo == nil {
		l.undo = removeOnSignal(&tempDirs{})
	}
}

// stop undoes arm, if it was called.
func (l *lazySignals) stop() {
	if l.undo != nil {
		l.undo()
	}
}
