package sentinel_test

import (
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/sentinel"
)

// Converting the options of go-redis's NewFailoverClient: a field rediskit
// cannot honour is refused, with the reason; the others become a Config,
// on which what go-redis has no counterpart for is then set.
func ExampleFromFailoverOptions() {
	fo := &redis.FailoverOptions{
		MasterName:    "mymaster",
		SentinelAddrs: []string{"10.0.0.1:26379", "10.0.0.2:26379"},
		ReplicaOnly:   true,
		PoolSize:      20,
		MaxRetries:    3,
	}
	_, err := sentinel.FromFailoverOptions(fo)
	var fe *sentinel.FailoverOptionsError
	if errors.As(err, &fe) {
		for _, r := range fe.Refused {
			fmt.Println("refused:", r.Field, r.Value)
		}
	}

	fo.MaxRetries = -1
	opts, err := sentinel.FromFailoverOptions(fo)
	if err != nil {
		fmt.Println(err)
		return
	}
	opts.Durable = true
	fmt.Println(opts.ReadFrom, opts.PoolSize, opts.Identity)
	// Output:
	// refused: MaxRetries 3
	// replica 20 true
}

// A URL in go-redis's failover form: its userinfo is the sentinels'
// credentials, the data nodes' are parameters.
func ExampleFromFailoverURL() {
	opts, err := sentinel.FromFailoverURL("redis://:sentinel-pw@10.0.0.1:26379/2?master_name=mymaster&addr=10.0.0.2:26379&password=app-pw&dial_timeout=3")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(opts.MasterName, opts.SentinelAddrs, opts.DB, opts.DialTimeout)
	fmt.Println(opts.SentinelPassword == "sentinel-pw", opts.Password == "app-pw")
	// Output:
	// mymaster [10.0.0.1:26379 10.0.0.2:26379] 2 3s
	// true true
}
