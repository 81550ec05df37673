package classify_test

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/classify"
)

func Example() {
	fmt.Println(classify.ReadOnlyArgs("GET", "user:42:name"))
	fmt.Println(classify.ReadOnlyArgs("INCR", "user:42:visits"))
	fmt.Println(classify.ReadOnlyArgs("OBJECT", "ENCODING", "user:42:name"))
	fmt.Println(classify.ReadOnlyArgs("INFO", "replication"))
	// Output:
	// true
	// false
	// true
	// false
}

func ExampleClassifier_ReadOnly() {
	ctx := context.Background()
	c := classify.New()
	// A command as go-redis builds it; it is classified, not sent.
	get := redis.NewStringCmd(ctx, "get", "user:42:name")
	set := redis.NewStatusCmd(ctx, "set", "user:42:name", "Ada")
	fmt.Println(c.ReadOnly(get), c.ReadOnly(set))
	// Output: true false
}

func ExampleClassifier_ReadOnlyPipeline() {
	ctx := context.Background()
	c := classify.New()
	reads := []redis.Cmder{
		redis.NewStringCmd(ctx, "get", "user:42:name"),
		redis.NewMapStringStringCmd(ctx, "hgetall", "user:42:profile"),
	}
	withWrite := append(reads, redis.NewIntCmd(ctx, "incr", "user:42:visits"))
	fmt.Println(c.ReadOnlyPipeline(reads))
	fmt.Println(c.ReadOnlyPipeline(withWrite))
	d, i := c.ExplainPipeline(withWrite)
	fmt.Printf("command %d: %s\n", i, d)
	// Output:
	// true
	// false
	// command 2: incr: write command (master)
}

func ExampleClassifier_Explain() {
	c := classify.New()
	for _, args := range [][]any{
		{"GET", "k"},
		{"MEMORY", "USAGE", "k"},
		{"XREAD", "STREAMS", "s", "0"},
		{"EVAL", "return redis.call('GET', KEYS[1])", 1, "k"},
		{"EVAL", "#!lua flags=no-writes\nreturn redis.call('GET', KEYS[1])", 1, "k"},
		{"EVALSHA", "c664a3bf70bd1d45c4284ffebb65a6f2299bfc9f", 1, "k"},
		{"MULTI"},
		{"FT.SEARCH", "idx", "*"},
	} {
		fmt.Println(c.Explain(args...))
	}
	// Output:
	// get: read-only command (replica)
	// memory|usage: server management (master)
	// xread: blocking (master)
	// eval: script without no-writes shebang (master)
	// eval: script with no-writes shebang (replica)
	// evalsha: script body not visible (use EVALSHA_RO or FCALL_RO) (master)
	// multi: transaction (master)
	// ft.search: unknown command (master)
}

func ExampleFirstKey() {
	fmt.Println(classify.FirstKey([]any{"GET", "user:{42}:name"}))
	fmt.Println(classify.FirstKey([]any{"EVAL", "return redis.call('GET', KEYS[1])", 1, "user:{42}:name"}))
	fmt.Println(classify.FirstKey([]any{"EVAL", "return 1", 0}))
	fmt.Println(classify.FirstKey([]any{"XREAD", "COUNT", 10, "STREAMS", "events:{42}", "0"}))
	fmt.Println(classify.FirstKey([]any{"PING"}))
	// Output:
	// 1
	// 3
	// -1
	// 4
	// -1
}

func ExampleKeyString() {
	args := []any{"INCR", 42} // go-redis sends the key 42 as "42"
	if i := classify.FirstKey(args); i >= 0 {
		key, _ := classify.KeyString(args[i])
		fmt.Printf("%q\n", key)
	}
	// Output: "42"
}
