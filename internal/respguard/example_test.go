package respguard_test

import (
	"bufio"
	"errors"
	"fmt"
	"net"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/respguard"
)

// A server answers PING, then declares an array of 2^31-1 elements: the
// guard passes the first reply and refuses the second before go-redis
// could allocate it.
func ExampleWrap() {
	client, server := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		server.Write([]byte("+PONG\r\n*2147483647\r\n"))
	}()
	c := respguard.Wrap(client, respguard.Limits{})
	defer c.Close()

	rd := bufio.NewReader(c) // as go-redis reads
	line, err := rd.ReadString('\n')
	fmt.Printf("%q %v\n", line, err)
	_, err = rd.ReadString('\n')
	var le *respguard.LimitError
	if errors.As(err, &le) {
		fmt.Println(le.What, le.Got, le.Limit)
	}
	<-done
	server.Close()
	// Output:
	// "+PONG\r\n" <nil>
	// aggregate elements 2147483647 65536
}

// WrapDialer guards every connection a go-redis client makes. (dial is the
// dialer the client would use otherwise; nil is a plain TCP dialer.)
func ExampleWrapDialer() {
	var dial respguard.DialFunc // e.g. one that does TLS
	c := redis.NewClient(&redis.Options{
		Addr:          "10.0.0.1:26379",
		Dialer:        respguard.WrapDialer(dial, respguard.Limits{}),
		MaxRetries:    -1,
		DialerRetries: 1,
	})
	defer c.Close()
	fmt.Println(c.Options().Addr)
	// Output: 10.0.0.1:26379
}
