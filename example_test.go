package rediskit_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit"
	"github.com/rediskit/rediskit/lab"
)

// The quick start: one client from the deployment's URL (here a local lab
// of one cluster shard, named by a plain redis:// seed, which the client
// finds is a cluster node).
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := lab.Start(ctx, lab.Config{Shards: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	url := "redis://" + l.ClusterAddrs()[0] // in production: os.Getenv("REDIS_URL")

	c, err := rediskit.NewClientFromURL(url, rediskit.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	if err := c.Set(ctx, "greeting", "hello", 0).Err(); err != nil {
		fmt.Println(err)
		return
	}
	v, err := c.Get(ctx, "greeting").Result()
	fmt.Println(v, err)
	fmt.Println(c.Kind())
	// Output:
	// hello <nil>
	// cluster
}

// Several databases, the highest weight active, the other taking over
// when it fails (package multidb).
func ExampleConfig_databases() {
	c, err := rediskit.NewClient(rediskit.Config{Databases: []rediskit.Database{
		{Name: "east", URL: "redis+sentinel://10.0.1.1,10.0.1.2,10.0.1.3/main", Weight: 2},
		{Name: "west", URL: "redis+sentinel://10.0.2.1,10.0.2.2,10.0.2.3/main", Weight: 1},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	fmt.Println(c.Kind())
	// Output: multidb
}

// Starting before Redis is up: the probe of a redis:// URL needs an
// answer, so say what the server is and nothing is dialled at NewClient.
func ExampleDetectError() {
	_, err := rediskit.NewClientFromURL("redis://:secret@127.0.0.1:1", rediskit.Config{DetectTimeout: time.Second})
	var de *rediskit.DetectError
	fmt.Println(errors.As(err, &de), de.Addr)
	// (With Config{Kind: rediskit.KindCluster} or NoClusterDetection the
	// client is made, and connects when it is first used.)
	// Output: true 127.0.0.1:1
}

// Coming from go-redis's NewUniversalClient.
func ExampleFromUniversalOptions() {
	cfg, err := rediskit.FromUniversalOptions(&redis.UniversalOptions{
		Addrs:      []string{"10.0.0.1:26379", "10.0.0.2:26379"},
		MasterName: "mymaster",
		Password:   os.Getenv("REDIS_PASSWORD"),
		MaxRetries: 3, // rediskit decides re-runs itself: refused
	})
	var ue *rediskit.UniversalOptionsError
	if errors.As(err, &ue) {
		fmt.Println(ue.Refused[0].Field)
	}
	_ = cfg
	// Output: MaxRetries
}

func ExampleFromOptions() {
	// The options a service gave redis.NewClient.
	cfg, err := rediskit.FromOptions(&redis.Options{
		Addr:       "10.0.0.1:6379",
		Password:   os.Getenv("REDIS_PASSWORD"),
		DB:         2,
		MaxRetries: -1, // go-redis's "no retries": what rediskit does anyway
	})
	if err != nil {
		fmt.Println(err) // each field it cannot honour, and why
		return
	}
	fmt.Println(cfg.URL)
	// Output: redis://10.0.0.1:6379/2
}

// A durable write for one call: confirmed by WAIT on the primary's replica
// before it returns, on a client whose other writes are not. The same
// context works on every topology.
func ExampleWithDurable() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := lab.Start(ctx, lab.Config{Replicas: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()

	c, err := rediskit.NewClientFromURL("redis://"+l.Node(0).Addr(), rediskit.Config{Kind: rediskit.KindStandalone})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	fmt.Println(c.Set(rediskit.WithDurable(ctx, true), "order:7", "paid", 0).Err())
	// Read it back from the primary, whatever Config.ReadFrom says.
	fmt.Println(c.Get(rediskit.WithReadFrom(ctx, rediskit.Master), "order:7").Val())
	// Output:
	// <nil>
	// paid
}
