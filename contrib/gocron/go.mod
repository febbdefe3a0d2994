module github.com/shepherdzk/shepherd/contrib/gocron

go 1.24

require (
	github.com/go-co-op/gocron/v2 v2.21.2
	github.com/go-zookeeper/zk v1.0.4
	github.com/jonboulle/clockwork v0.5.0
	github.com/robfig/cron/v3 v3.0.1
	github.com/shepherdzk/shepherd v0.0.0-20261127030634-b9d427256852
	github.com/stretchr/testify v1.11.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
