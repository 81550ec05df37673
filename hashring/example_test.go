package hashring_test

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/rediskit/rediskit/hashring"
	"github.com/rediskit/rediskit/lab"
)

// Two workers split 100 accounts; when one stops, the other takes them
// all back. Each processes only the accounts its node contains.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := lab.Start(ctx, lab.Standalone())
	if err != nil {
		fmt.Println("lab:", err)
		return
	}
	defer l.Close()
	client := l.Node(0).NewClient()
	defer client.Close()

	owned := func(n *hashring.Node) int {
		count := 0
		for i := range 100 {
			if n.Contains(strconv.Itoa(i)) {
				count++
			}
		}
		return count
	}

	// Nodes in one process need distinct hostnames or PIDs.
	a, _ := hashring.NewNode(client, "example-ring", hashring.Config{Hostname: "worker-a"})
	b, _ := hashring.NewNode(client, "example-ring", hashring.Config{Hostname: "worker-b"})
	if err := a.Start(ctx); err != nil {
		fmt.Println("start:", err)
		return
	}
	fmt.Println("a alone owns", owned(a), "accounts")

	<-a.Changes() // Start gave a its ranges
	if err := b.Start(ctx); err != nil {
		fmt.Println("start:", err)
		return
	}
	<-a.Changes() // a read b's notice and gave up b's share
	fmt.Println("a and b own", owned(a)+owned(b), "accounts between them, none twice:", owned(a) < 100 && owned(b) > 0)

	_ = b.Stop(ctx)
	<-a.Changes() // b's notice: a owns everything again
	fmt.Println("after b stops, a owns", owned(a), "accounts")
	_ = a.Stop(ctx)
	// Output:
	// a alone owns 100 accounts
	// a and b own 100 accounts between them, none twice: true
	// after b stops, a owns 100 accounts
}

// A router asks a read-only view which node owns a key.
func ExampleRing() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := lab.Start(ctx, lab.Standalone())
	if err != nil {
		fmt.Println("lab:", err)
		return
	}
	defer l.Close()
	client := l.Node(0).NewClient()
	defer client.Close()

	node, _ := hashring.NewNode(client, "jobs", hashring.Config{Hostname: "worker-1", PID: 100})
	if err := node.Start(ctx); err != nil {
		fmt.Println("start:", err)
		return
	}
	defer node.Stop(ctx)

	view, _ := hashring.NewRing(client, "jobs", hashring.Config{})
	snap, err := view.Load(ctx) // or go view.Run(ctx) to follow the ring
	if err != nil {
		fmt.Println("load:", err)
		return
	}
	owner, _ := snap.Owner("job-42")
	fmt.Println(snap.NodeCount(), "node; job-42 goes to", owner)
	// Output: 1 node; job-42 goes to worker-1:100
}

func ExamplePoint() {
	fmt.Println(hashring.Point("hello"), hashring.CRC32.Point("hello"))
	// Output: 4211111929 907060870
}

func ExampleParseMember() {
	m, err := hashring.ParseMember("706234936:mbp.local:80721:249d729d")
	fmt.Println(m.Start, m.NodeID(), m.ID, err)
	_, err = hashring.ParseMember("706234936:fe80::1:80721:249d729d")
	fmt.Println(err)
	// Output:
	// 706234936 mbp.local:80721 249d729d <nil>
	// hashring: malformed ring member "706234936:fe80::1:80721:249d729d": want <start>:<hostname>:<pid>:<id>, exactly three ':'
}
