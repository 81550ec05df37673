package multidb_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/multidb"
)

// startTwo starts two independent servers (local labs) for the examples.
func startTwo(ctx context.Context) (primary, standby *lab.Lab, err error) {
	if primary, err = lab.Start(ctx, lab.Standalone()); err != nil {
		return nil, nil, err
	}
	if standby, err = lab.Start(ctx, lab.Standalone()); err != nil {
		_ = primary.Close()
		return nil, nil, err
	}
	return primary, standby, nil
}

// A primary and a standby: the primary dies, and traffic moves to the
// standby on its own.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	primary, standby, err := startTwo(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer primary.Close()
	defer standby.Close()

	switches := make(chan multidb.Event, 16)
	c, err := multidb.NewClient(multidb.Config{
		Databases: []multidb.Database{
			{Name: "primary", Weight: 10, Options: &redis.Options{Addr: primary.Node(0).Addr()}},
			{Name: "standby", Weight: 5, Options: &redis.Options{Addr: standby.Node(0).Addr()}},
		},
		Observer: func(ev multidb.Event) {
			switch ev.Kind {
			case multidb.EventActivated: // where traffic starts; not a switch
				fmt.Println("active:", ev.New)
			case multidb.EventActiveChanged:
				switches <- ev
			}
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	_ = primary.Node(0).Kill()
	// The calls that find the primary dead trip its breaker (three
	// connection failures in a row, each of a call made after the last
	// failed); the next ones go to the standby.
	for c.Active() == "primary" {
		_ = c.Set(ctx, "greeting", "hello", 0).Err()
	}
	ev := <-switches
	fmt.Printf("%s → %s (%s)\n", ev.Old, ev.New, ev.Reason)
	fmt.Println(c.Set(ctx, "greeting", "hello", 0).Err())
	// Output:
	// active: primary
	// primary → standby (automatic)
	// <nil>
}

// A planned switch, as for a module upgrade: the standby is checked, then
// gets all new calls; the primary can be restarted while it is idle, and
// traffic moves back when the weights are restored.
func ExampleClient_SetActive() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	primary, standby, err := startTwo(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer primary.Close()
	defer standby.Close()

	c, err := multidb.NewClient(multidb.Config{Databases: []multidb.Database{
		{Name: "primary", Weight: 10, Options: &redis.Options{Addr: primary.Node(0).Addr()}},
		{Name: "standby", Weight: 5, Options: &redis.Options{Addr: standby.Node(0).Addr()}},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	if err := c.SetActive(ctx, "standby"); err != nil { // refused if unhealthy
		fmt.Println(err)
		return
	}
	for _, d := range c.Stats().Databases {
		fmt.Printf("%s weight=%g breaker=%s active=%v\n", d.Name, d.Weight, d.State, d.Active)
	}
	// ... restart the primary here ...
	if err := c.UpdateWeight(ctx, "primary", 20); err != nil { // the top again: traffic moves back
		fmt.Println(err)
		return
	}
	fmt.Println("active:", c.Active())
	// Output:
	// primary weight=10 breaker=closed active=false
	// standby weight=5 breaker=closed active=true
	// active: primary
}
