package timeline_test

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/rediskit/rediskit/timeline"
)

// A drill through a failover at 1 s: writes move from the old master to
// the new one after a 150 ms hold, two end in "master changed".
func Example() {
	ms := time.Millisecond
	d := &timeline.Drill{
		Run:     timeline.Run{Title: "failover of mymaster", Date: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC), Note: "Redis 7.0.15"},
		Length:  2 * time.Second,
		Events:  []timeline.Event{{At: 1000 * ms, Name: "failover requested"}, {At: 1150 * ms, Name: "master changed", Detail: "127.0.0.1:6380"}},
		Windows: []timeline.Window{{From: 1000 * ms, To: 1150 * ms, Label: "write hold"}},
	}
	for t := 5 * ms; t < 2*time.Second; t += 10 * ms {
		node := "127.0.0.1:6379"
		if t >= 1000*ms && t < 1150*ms {
			continue // held
		}
		if t >= 1150*ms {
			node = "127.0.0.1:6380"
		}
		d.Ops = append(d.Ops, timeline.Op{At: t, Kind: timeline.KindWrite, Node: node})
	}
	d.Ops = append(d.Ops,
		timeline.Op{At: 1003 * ms, Kind: timeline.KindWrite, Err: "master changed"},
		timeline.Op{At: 1007 * ms, Kind: timeline.KindWrite, Err: "master changed"})

	dir, err := os.MkdirTemp("", "timeline-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "drill.svg")
	if err := timeline.WriteFile(path, d); err != nil {
		log.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(filepath.Base(path), bytes.HasPrefix(b, []byte("<?xml")), bytes.Contains(b, []byte("writes via 127.0.0.1:6380")))
	// Output: drill.svg true true
}

// Two clients' runs of the same drill in one picture, on the same axes.
func ExampleSideBySide() {
	ms := time.Millisecond
	ours := &timeline.Drill{Run: timeline.Run{Title: "rediskit"}, Length: time.Second,
		Ops: []timeline.Op{{At: 100 * ms, Kind: timeline.KindWrite, Node: "127.0.0.1:6380"}}}
	theirs := &timeline.Drill{Run: timeline.Run{Title: "go-redis"}, Length: 2 * time.Second,
		Ops: []timeline.Op{{At: 1500 * ms, Kind: timeline.KindWrite, Err: "READONLY"}}}
	err := timeline.SideBySide(ours, theirs).Render(io.Discard, timeline.SVG)
	fmt.Println(err)
	// Output: <nil>
}

func ExampleFormatOf() {
	for _, name := range []string{"drill.svg", "probe.PNG", "drill.pdf"} {
		f, err := timeline.FormatOf(name)
		fmt.Println(f, err)
	}
	// Output:
	// SVG <nil>
	// PNG <nil>
	// SVG timeline: "drill.pdf": unknown picture extension ".pdf": name the picture .svg or .png
}
