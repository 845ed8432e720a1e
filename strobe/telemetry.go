package strobe

import "github.com/cosched/cosched/telemetry"

// The slice clock's reports are plain data of package telemetry, which the
// API carries without importing this package.
type (
	Dist          = telemetry.Dist
	Stats         = telemetry.FollowerStats
	PeerHeartbeat = telemetry.PeerHeartbeat
	SkewStats     = telemetry.SkewStats
	SliceRecord   = telemetry.SliceRecord
	TickerStats   = telemetry.TickerStats
)
