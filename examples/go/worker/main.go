// A batch of jobs with one bad item, a listing, and a worker that handles each expiration once:
// go run examples/go/worker/main.go [ADDRESS]   (default $LAWN_ADDR, else 127.0.0.1:7070)
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"lawn.dev/lawn"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := lawn.Dial(address())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	// One StartTimers call; each item succeeds or fails on its own.
	specs := []lawn.TimerSpec{
		{Namespace: "jobs", ID: "job-1", TTL: 500 * time.Millisecond, Payload: []byte("resize image 1"), Replace: true},
		{Namespace: "jobs", ID: "job-2", TTL: time.Second, Payload: []byte("resize image 2"), Replace: true},
		{Namespace: "Not A Namespace", ID: "job-3", TTL: time.Second},
	}
	results, err := client.StartMany(ctx, specs, nil)
	if err != nil {
		log.Fatal(err)
	}
	for i, r := range results {
		switch {
		case r.Err == nil:
			fmt.Println(specs[i].ID, "started")
		case errors.Is(r.Err, lawn.ErrInvalidArgument):
			fmt.Println(specs[i].ID, "refused:", r.Err)
		default:
			log.Fatal(r.Err)
		}
	}

	it := client.List(ctx, "jobs", 100)
	for it.Next() {
		fmt.Println("pending:", it.Timer().ID, "due", it.Timer().Deadline.Format(time.RFC3339Nano))
	}
	if it.Err() != nil {
		log.Fatal(it.Err())
	}

	sub, err := client.Subscribe(ctx, "jobs", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer sub.Close() // Sends the last acks.
	done := map[string]bool{}
	err = sub.Handle(func(exp *lawn.Expiration) error { // Returning nil acks it; an error leaves it for later.
		fmt.Printf("handled %s (%s), %v after its deadline\n", exp.Timer.ID, exp.Timer.Payload,
			exp.FiredAt.Sub(exp.Timer.Deadline).Round(time.Millisecond))
		if done[exp.Timer.ID] = true; done["job-1"] && done["job-2"] {
			return lawn.ErrStopHandling // Acks this one too.
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
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
