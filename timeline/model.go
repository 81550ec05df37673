package timeline

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// DefaultBucket is the width of a Drill figure's bars when Drill.Bucket is
// zero: 50 ms, short enough to show a 100–300 ms write hold as a gap of
// several bars, long enough that a 1,000 ops/s load fills each bar with
// about 50 operations.
const DefaultBucket = 50 * time.Millisecond

// Outcomes of an Op other than an error kind.
const (
	OutcomeOK = "" // acknowledged (a write) or answered (a read)
)

// Op kinds.
const (
	KindWrite = "write"
	KindRead  = "read"
)

// Run says where a figure's data came from; the figure prints it under
// the title so that a picture in a document names its run.
type Run struct {
	// Title is the figure's heading ("rediskit drill, failover of mymaster").
	Title string `json:"title"`
	// Date is when the run started; printed in UTC to the second.
	Date time.Time `json:"date"`
	// Machine is the host the run was on ("2 CPUs, linux/amd64").
	Machine string `json:"machine,omitempty"`
	// Load is the machine's load while the run started ("load 1.20").
	Load string `json:"load,omitempty"`
	// Note is anything else the reader should know ("Redis 7.0.15").
	Note string `json:"note,omitempty"`
}

// ThisRun is a Run started now on this machine: the date, the CPU count
// and platform, and the 1-minute load average where the system reports
// one (Linux's /proc/loadavg).
func ThisRun(title string) Run {
	r := Run{Title: title, Date: time.Now(), Machine: fmt.Sprintf("%d CPUs, %s/%s", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			r.Load = "load " + f[0]
		}
	}
	return r
}

// Caption is the run's line under the title: date, machine, load and note.
func (r Run) Caption() string {
	var parts []string
	if !r.Date.IsZero() {
		parts = append(parts, r.Date.UTC().Format("2006-01-02 15:04:05 UTC"))
	}
	for _, s := range []string{r.Machine, r.Load, r.Note} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ", ")
}

// Op is one operation a run sent and what became of it.
type Op struct {
	// At is when the operation ended (its reply or error), since the
	// run's start.
	At time.Duration `json:"at"`
	// Kind is KindWrite or KindRead.
	Kind string `json:"kind"`
	// Node is the address of the server that answered it ("" when
	// unknown, or for an error no server sent).
	Node string `json:"node,omitempty"`
	// Err is the kind of error it ended with ("timeout", "master
	// changed", ...); OutcomeOK ("") for an acknowledged write or an
	// answered read.
	Err string `json:"err,omitempty"`
	// Lost: an acknowledged write the final data does not hold.
	Lost bool `json:"lost,omitempty"`
	// Duplicated: a write the final data holds more than once.
	Duplicated bool `json:"duplicated,omitempty"`
}

// Event is something the run's client or the test reported at one moment
// (a failover requested, a master change); drawn as a marker.
type Event struct {
	At     time.Duration `json:"at"`
	Name   string        `json:"name"`
	Detail string        `json:"detail,omitempty"`
}

// Window is a span the figure shades, such as the client's write hold
// during a failover.
type Window struct {
	From  time.Duration `json:"from"`
	To    time.Duration `json:"to"`
	Label string        `json:"label"`
}

// Drill is a load run's record: every operation with its serving node and
// outcome, the client's events and the windows to shade. Its figure draws
// the acknowledged operations of each kind per Bucket stacked by serving
// node, the errors per Bucket stacked by kind below the axis, lost and
// duplicated writes as marks, the windows shaded and the events as
// vertical markers.
type Drill struct {
	Run Run `json:"run"`
	// Length is the run's duration (the x axis); 0: up to the last op or
	// event.
	Length time.Duration `json:"length"`
	// Bucket is the width of a bar; 0: DefaultBucket.
	Bucket  time.Duration `json:"bucket,omitempty"`
	Ops     []Op          `json:"ops"`
	Events  []Event       `json:"events,omitempty"`
	Windows []Window      `json:"windows,omitempty"`
}

// Probe is a replica election's record: each probe round's RTT per node
// and the node(s) elected. Its figure draws RTT per node over time, one
// line per node, the elected node(s) of each round marked on their line,
// and the election's changes as vertical markers.
type Probe struct {
	Run    Run     `json:"run"`
	Rounds []Round `json:"rounds"`
	// Events are the election's changes (Name: the reason).
	Events []Event `json:"events,omitempty"`
}

// Round is one probe round's table.
type Round struct {
	// At is when the round ended, since the run's start.
	At    time.Duration `json:"at"`
	Nodes []NodeRTT     `json:"nodes"`
}

// NodeRTT is one node's row of a round.
type NodeRTT struct {
	Addr string `json:"addr"`
	Role string `json:"role"` // "master" or "replica"
	// RTT is the node's smoothed round trip (EWMA); 0 before its first
	// sample.
	RTT     time.Duration `json:"rtt"`
	Healthy bool          `json:"healthy"`
	Elected bool          `json:"elected"`
}
