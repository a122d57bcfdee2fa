// Package traceevent checks files in the Chrome trace event format (the
// JSON that ui.perfetto.dev, Perfetto's trace_processor and
// chrome://tracing open), as hijack report --perfetto writes them: the
// fields each phase requires, timestamps that never go back on a counter
// track, one name per process and per thread. Tests use it on hijack's
// output; it knows the phases hijack writes (M, C, i/I) and rejects others.
package traceevent

import (
	"encoding/json"
	"fmt"
	"math"
)

// Event is one trace event as decoded.
type Event struct {
	Ph    string          `json:"ph"`
	Name  *string         `json:"name"`
	PID   *uint32         `json:"pid"`
	TID   *uint32         `json:"tid"`
	TS    *float64        `json:"ts"`
	Scope string          `json:"s"`
	Args  json.RawMessage `json:"args"`
}

// Thread identifies a thread of a process.
type Thread struct{ PID, TID uint32 }

// Summary is what a checked file holds.
type Summary struct {
	Events        int
	ProcessNames  map[uint32]string
	ThreadNames   map[Thread]string
	Counters      map[Thread]map[string]float64 // per thread, each counter series summed over its samples
	Samples       map[Thread]int                // counter events per thread
	MaxCounter    map[Thread]map[string]float64 // per thread, each series' largest value
	Instants      []Instant
	FirstTS, Last float64
}

// Instant is an instant event.
type Instant struct {
	Thread
	TS    float64
	Scope string
	Name  string
}

// Check decodes a trace event file ({"traceEvents": [...]}) and checks
// it: every event has ph, name, pid and tid; all but metadata a finite ts
// >= 0; counters (C) an args object of numbers and, per track (pid and
// name: a track's series are its args), timestamps that do not decrease;
// instants (i, I) a scope g, p or t; metadata (M) process_name,
// thread_name or process_labels with a string in args; at most one
// process_name per process and one thread_name per thread, and every
// thread that has events named.
func Check(data []byte) (*Summary, error) {
	var f struct {
		TraceEvents []Event `json:"traceEvents"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	if f.TraceEvents == nil {
		return nil, fmt.Errorf("no traceEvents array")
	}
	s := &Summary{ProcessNames: map[uint32]string{}, ThreadNames: map[Thread]string{},
		Counters: map[Thread]map[string]float64{}, Samples: map[Thread]int{}, MaxCounter: map[Thread]map[string]float64{},
		FirstTS: math.Inf(1), Last: math.Inf(-1)}
	type track struct {
		pid  uint32
		name string
	}
	lastTS := map[track]float64{}
	used := map[Thread]bool{}
	for i, e := range f.TraceEvents {
		where := fmt.Sprintf("event %d (ph %q)", i, e.Ph)
		if e.Name == nil || e.PID == nil || e.TID == nil {
			return nil, fmt.Errorf("%s: lacks name, pid or tid", where)
		}
		th := Thread{*e.PID, *e.TID}
		if e.Ph != "M" {
			if e.TS == nil || math.IsNaN(*e.TS) || math.IsInf(*e.TS, 0) || *e.TS < 0 {
				return nil, fmt.Errorf("%s %q: no valid ts", where, *e.Name)
			}
			s.FirstTS = min(s.FirstTS, *e.TS)
			s.Last = max(s.Last, *e.TS)
			used[th] = true
		}
		switch e.Ph {
		case "M":
			var a struct {
				Name   *string `json:"name"`
				Labels *string `json:"labels"`
			}
			if err := json.Unmarshal(e.Args, &a); err != nil {
				return nil, fmt.Errorf("%s: args: %v", where, err)
			}
			switch *e.Name {
			case "process_name":
				if a.Name == nil {
					return nil, fmt.Errorf("%s: process_name without args.name", where)
				}
				if _, dup := s.ProcessNames[th.PID]; dup {
					return nil, fmt.Errorf("%s: a second process_name for pid %d", where, th.PID)
				}
				s.ProcessNames[th.PID] = *a.Name
			case "thread_name":
				if a.Name == nil {
					return nil, fmt.Errorf("%s: thread_name without args.name", where)
				}
				if _, dup := s.ThreadNames[th]; dup {
					return nil, fmt.Errorf("%s: a second thread_name for %d/%d", where, th.PID, th.TID)
				}
				s.ThreadNames[th] = *a.Name
			case "process_labels":
				if a.Labels == nil {
					return nil, fmt.Errorf("%s: process_labels without args.labels", where)
				}
			default:
				return nil, fmt.Errorf("%s: unknown metadata %q", where, *e.Name)
			}
		case "C":
			var a map[string]float64
			if err := json.Unmarshal(e.Args, &a); err != nil || len(a) == 0 {
				return nil, fmt.Errorf("%s %q: args are not numbers: %s", where, *e.Name, e.Args)
			}
			tr := track{th.PID, *e.Name}
			if last, ok := lastTS[tr]; ok && *e.TS < last {
				return nil, fmt.Errorf("%s: counter track %q of pid %d goes back in time: %.3f after %.3f", where, *e.Name, th.PID, *e.TS, last)
			}
			lastTS[tr] = *e.TS
			if s.Counters[th] == nil {
				s.Counters[th], s.MaxCounter[th] = map[string]float64{}, map[string]float64{}
			}
			for k, v := range a {
				s.Counters[th][k] += v
				s.MaxCounter[th][k] = max(s.MaxCounter[th][k], v)
			}
			s.Samples[th]++
		case "i", "I":
			switch e.Scope {
			case "g", "p", "t":
			default:
				return nil, fmt.Errorf("%s %q: scope %q", where, *e.Name, e.Scope)
			}
			s.Instants = append(s.Instants, Instant{th, *e.TS, e.Scope, *e.Name})
		default:
			return nil, fmt.Errorf("%s: a phase this checker does not know", where)
		}
		s.Events++
	}
	for th := range used {
		if _, ok := s.ThreadNames[th]; !ok && th.TID != th.PID {
			return nil, fmt.Errorf("thread %d/%d has events but no thread_name", th.PID, th.TID)
		}
		if _, ok := s.ProcessNames[th.PID]; !ok {
			return nil, fmt.Errorf("process %d has events but no process_name", th.PID)
		}
	}
	return s, nil
}
