package semaphore

// SetTestHookBeforeClaim sets a function run before each slot claim's
// create (nil: none), and returns a function that removes it.
func SetTestHookBeforeClaim(f func()) (reset func()) {
	testHookBeforeClaim.Store(&f)
	return func() { testHookBeforeClaim.Store(nil) }
}
