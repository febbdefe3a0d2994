package main

// The time zones of schedule -tz and CRON_TZ= are in the binary, so that
// they work on a host or an image without /usr/share/zoneinfo.
import _ "time/tzdata"
