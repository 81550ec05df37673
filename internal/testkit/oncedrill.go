package testkit

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// OnceDrill drives writers through a fault and counts what the history
// that survives holds: the exactly-once drills (TestExactlyOnce...) of
// each routed client, run side by side for the client under test and the
// same client writing plainly.
type OnceDrill struct {
	// Name labels the report ("plain", "exactly-once").
	Name string
	// Client is the client the writers use.
	Client redis.Cmdable
	// Tag is a hash tag the drill's keys share ("{eo}"), so that on a
	// cluster the fault on its shard meets every write; Name keeps two
	// drills' keys apart.
	Tag string
	// Writers (default 8) each alternate RPUSH of a unique id to one list
	// and INCR of their own counter; OpTimeout (default 10 s) bounds each
	// call, Pause (default 2 ms) spaces them.
	Writers   int
	OpTimeout time.Duration
	Pause     time.Duration
	// Pipeline sends each writer's RPUSH and INCR as one pipeline.
	Pipeline bool
}

// OnceReport is what a drill saw: per writer and in all.
type OnceReport struct {
	Name string
	// Acked counts the writes acknowledged; Errors those that failed, by
	// kind; MayHave those whose error said the write may have run.
	Acked, MayHave int
	Errors         map[string]int
	// Duplicates are ids the list holds more than once; Lost acknowledged
	// ids it does not hold.
	Duplicates, Lost int
	// ExtraRuns are INCRs that ran more often than acknowledged plus
	// failed (a counter beyond what its writer sent: a write run twice);
	// CounterLost those below the acknowledged count.
	ExtraRuns, CounterLost int
}

func (r OnceReport) String() string {
	kinds := make([]string, 0, len(r.Errors))
	for k, n := range r.Errors {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(kinds)
	errs := "0"
	if len(kinds) > 0 {
		errs = strings.Join(kinds, ", ")
	}
	return fmt.Sprintf("| %s | %d | %d | %d | %d | %d | %s |", r.Name, r.Acked, r.Duplicates, r.ExtraRuns, r.MayHave, r.Lost+r.CounterLost, errs)
}

// OnceHeader is the header of the table OnceReport.String rows make.
const OnceHeader = "| client | acknowledged | duplicate ids | INCRs run twice | may-have-executed errors | acknowledged then lost | errors |\n|---|---|---|---|---|---|---|"

// retryAdvisor is the method of rediskit's typed errors that says whether
// the work may have run.
type retryAdvisor interface {
	RetryAdvice() (after time.Duration, mayHaveExecuted bool)
}

// MayHaveExecuted reports whether err says its write may have run.
func MayHaveExecuted(err error) bool {
	var ra retryAdvisor
	if errors.As(err, &ra) {
		_, may := ra.RetryAdvice()
		return may
	}
	return false
}

// OnceRun is a drill under way: Stop ends its writers; Report reads the
// surviving history through final.
type OnceRun struct {
	d        OnceDrill
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
	mu       sync.Mutex
	// per writer: ids acknowledged, INCRs acknowledged and failed.
	acked            [][]string
	incrOK, incrFail []int
	rep              OnceReport
}

// Start starts the drill's writers.
func (d OnceDrill) Start(ctx context.Context) *OnceRun {
	if d.Writers == 0 {
		d.Writers = 8
	}
	if d.OpTimeout == 0 {
		d.OpTimeout = 10 * time.Second
	}
	if d.Pause == 0 {
		d.Pause = 2 * time.Millisecond
	}
	r := &OnceRun{d: d, stop: make(chan struct{}), acked: make([][]string, d.Writers),
		incrOK: make([]int, d.Writers), incrFail: make([]int, d.Writers),
		rep: OnceReport{Name: d.Name, Errors: map[string]int{}}}
	for w := range d.Writers {
		r.wg.Go(func() { r.write(ctx, w) })
	}
	return r
}

func (r *OnceRun) listKey() string { return r.d.Tag + r.d.Name + ":ops" }
func (r *OnceRun) counterKey(w int) string {
	return r.d.Tag + r.d.Name + ":n:" + strconv.Itoa(w)
}

func (r *OnceRun) failed(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if MayHaveExecuted(err) {
		r.rep.MayHave++
	}
	kind := fmt.Sprintf("%T", err)
	var re redis.Error
	if errors.As(err, &re) {
		kind = strings.SplitN(err.Error(), " ", 2)[0]
	}
	r.rep.Errors[kind]++
}

func (r *OnceRun) write(ctx context.Context, w int) {
	for i := 0; ; i++ {
		select {
		case <-r.stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		id := fmt.Sprintf("%d-%d", w, i)
		octx, cancel := context.WithTimeout(ctx, r.d.OpTimeout)
		var err, incrErr error
		if r.d.Pipeline {
			var push *redis.IntCmd
			var incr *redis.IntCmd
			_, _ = r.d.Client.Pipelined(octx, func(p redis.Pipeliner) error {
				push, incr = p.RPush(octx, r.listKey(), id), p.Incr(octx, r.counterKey(w))
				return nil
			})
			err, incrErr = push.Err(), incr.Err()
		} else {
			err = r.d.Client.RPush(octx, r.listKey(), id).Err()
			incrErr = r.d.Client.Incr(octx, r.counterKey(w)).Err()
		}
		cancel()
		if err == nil {
			r.mu.Lock()
			r.acked[w] = append(r.acked[w], id)
			r.rep.Acked++
			r.mu.Unlock()
		} else {
			r.failed(err)
		}
		r.mu.Lock()
		if incrErr == nil {
			r.incrOK[w]++
			r.rep.Acked++
		} else {
			r.incrFail[w]++
		}
		r.mu.Unlock()
		if incrErr != nil {
			r.failed(incrErr)
		}
		time.Sleep(r.d.Pause)
	}
}

// Stop ends the writers and waits for them; again, it does nothing.
func (r *OnceRun) Stop() {
	r.stopOnce.Do(func() { close(r.stop) })
	r.wg.Wait()
}

// Named is a client of a drill, the name its report gets, and whether
// its writers pipeline.
type Named struct {
	Name     string
	Client   redis.Cmdable
	Pipeline bool
}

// StartOnce pings each client and starts a drill (8 writers, keys under
// tag) through it; the test's end stops any still running.
func StartOnce(ctx context.Context, t testing.TB, tag string, clients ...Named) []*OnceRun {
	t.Helper()
	var runs []*OnceRun
	t.Cleanup(func() { StopAll(runs) })
	for _, c := range clients {
		if err := c.Client.Ping(ctx).Err(); err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		runs = append(runs, OnceDrill{Name: c.Name, Client: c.Client, Tag: tag, Pipeline: c.Pipeline}.Start(ctx))
	}
	return runs
}

// StopAll stops every run.
func StopAll(runs []*OnceRun) {
	for _, r := range runs {
		r.Stop()
	}
}

// Report reads the list and the counters through final (the master, once
// the topology settled) and counts.
func (r *OnceRun) Report(ctx context.Context, final redis.Cmdable) (OnceReport, error) {
	ids, err := final.LRange(ctx, r.listKey(), 0, -1).Result()
	if err != nil {
		return OnceReport{}, err
	}
	seen := map[string]int{}
	for _, id := range ids {
		seen[id]++
	}
	rep := r.rep
	for _, n := range seen {
		if n > 1 {
			rep.Duplicates += n - 1
		}
	}
	for w := range r.d.Writers {
		for _, id := range r.acked[w] {
			if seen[id] == 0 {
				rep.Lost++
			}
		}
		n, err := final.Get(ctx, r.counterKey(w)).Int()
		if err != nil && !errors.Is(err, redis.Nil) {
			return OnceReport{}, err
		}
		switch {
		case n > r.incrOK[w]+r.incrFail[w]:
			rep.ExtraRuns += n - r.incrOK[w] - r.incrFail[w]
		case n < r.incrOK[w]:
			rep.CounterLost += r.incrOK[w] - n
		}
	}
	return rep, nil
}

// CheckOnce reports each drill's figures through final, under a header
// naming the fault, and checks what every exactly-once drill promises:
// no id twice and no INCR run twice for any client; no may-have-executed
// error reaching a caller for a client whose name starts "exactly-once";
// nothing acknowledged then lost for one whose name says "durable". It
// returns the reports, for a test's own checks.
func CheckOnce(ctx context.Context, t testing.TB, final redis.Cmdable, title string, runs []*OnceRun) []OnceReport {
	t.Helper()
	t.Logf("%s:\n%s", title, OnceHeader)
	var reps []OnceReport
	for _, r := range runs {
		rep, err := r.Report(ctx, final)
		if err != nil {
			t.Fatal(err)
		}
		reps = append(reps, rep)
		t.Log(rep.String())
		if rep.Acked == 0 {
			t.Errorf("%s: nothing acknowledged", rep.Name)
		}
		if rep.Duplicates != 0 || rep.ExtraRuns != 0 {
			t.Errorf("%s: %d duplicate ids, %d INCRs run twice", rep.Name, rep.Duplicates, rep.ExtraRuns)
		}
		if strings.HasPrefix(rep.Name, "exactly-once") && rep.MayHave != 0 {
			t.Errorf("%s: %d may-have-executed errors reached callers", rep.Name, rep.MayHave)
		}
		if strings.Contains(rep.Name, "durable") && rep.Lost+rep.CounterLost != 0 {
			t.Errorf("%s: %d acknowledged writes lost", rep.Name, rep.Lost+rep.CounterLost)
		}
	}
	return reps
}
