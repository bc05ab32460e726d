// Starts a timer and receives its expiration: go run examples/go/quickstart/main.go [ADDRESS]
// (the address is the first argument or $LAWN_ADDR, default 127.0.0.1:7070: the quick-start lawnd).
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"lawn.dev/lawn"
)

func main() {
	ctx := context.Background()
	client, err := lawn.Dial(address())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	sub, err := client.Subscribe(ctx, "demo", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer sub.Close()
	spec := lawn.TimerSpec{Namespace: "demo", ID: "hello", TTL: 2 * time.Second, Payload: []byte("hi"), Replace: true}
	if _, err := client.Start(ctx, spec); err != nil {
		log.Fatal(err)
	}
	for exp := range sub.Expirations() {
		fmt.Println(exp.Timer.ID, string(exp.Timer.Payload), "late:", exp.Late, "attempt", exp.Attempt)
		exp.Ack() // Not acked: delivered again after lawnd's ack_timeout.
		if exp.Timer.ID == "hello" {
			return
		}
	}
	log.Fatal(sub.Err())
}

func address() string {
	if len(os.Args) > 1 {
		return os.Args[1]
	}
	if a := os.Getenv("LAWN_ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:7070"
}
