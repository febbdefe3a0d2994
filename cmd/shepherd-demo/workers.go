package main

import "context"

// runWorkers runs examples/workers (added with the semaphore).
func (d *demo) runWorkers(ctx context.Context) error { return nil }
