// Command shepherd-demo is what `make demo` runs: it starts a local ZooKeeper on
// loopback in a temporary directory and shows shepherd at work against it.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/shepherdzk/shepherd/zktest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	fmt.Println("starting a local ZooKeeper on loopback ...")
	c, err := zktest.StartCluster(ctx, 1)
	if err != nil {
		return err
	}
	defer c.Close()
	fmt.Printf("ZooKeeper is serving at %s (started in %v)\n", c.ConnectString(), c.StartupTime().Round(time.Millisecond))
	out, err := c.FourLetter(ctx, 0, "srvr")
	if err != nil {
		return err
	}
	fmt.Print(out)
	return nil
}
