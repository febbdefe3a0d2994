// The consumer check's helper: a module of its own, so that neither it nor
// golang.org/x/mod is part of shepherd's module (its files are left out of
// shepherd's module zip, and importers never see this requirement).
module github.com/shepherdzk/shepherd/internal/consumercheck

go 1.23.0

require golang.org/x/mod v0.27.0
