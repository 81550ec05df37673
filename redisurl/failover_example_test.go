package redisurl_test

import (
	"fmt"

	"github.com/rediskit/rediskit/redisurl"
)

// go-redis's failover URL, read as redis.ParseFailoverURL reads it, but
// with errors that do not quote the password.
func ExampleParseFailoverURL() {
	fo, err := redisurl.ParseFailoverURL("redis://:s3cret@10.0.0.1:26379?master_name=mymaster&addr=10.0.0.2:26379")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(fo.MasterName, fo.SentinelAddrs)

	_, err = redisurl.ParseFailoverURL("redis://:s3cret@10.0.0.1:bad?master_name=mymaster")
	fmt.Println(err)
	// Output:
	// mymaster [10.0.0.1:26379 10.0.0.2:26379]
	// redisurl: URL: go-redis's ParseFailoverURL refused it (its message is not shown: it can quote a password) (check the hosts and ports, the parameters and their values, and percent-encode '/', '?', '#', '&', '@' and '%' in the user names and passwords)
}
