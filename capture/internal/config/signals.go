package config

import (
	"fmt"
	"strings"
)

// Ad-hoc snapshot signals (capture/README.md, "Snapshots").

// SignalChannels parses signal-enabled-channels (Debezium's
// signal.enabled.channels): binlake reads signals from Kafka only.
func (c *Config) SignalChannels() (kafka bool, err error) {
	for _, ch := range strings.Split(c.SignalEnabledChannels, ",") {
		switch ch = strings.TrimSpace(ch); ch {
		case "":
		case "kafka":
			kafka = true
		case "source", "jmx", "file", "in-process":
			return false, fmt.Errorf("signal-enabled-channels: the %s channel is not supported; binlake reads signals from Kafka only (kafka)", ch)
		default:
			return false, fmt.Errorf("signal-enabled-channels %q: want kafka (or nothing)", ch)
		}
	}
	return kafka, nil
}

// validateSignals checks the signal settings and fills the topic's default
// (Debezium's <topic.prefix>-signal).
func (c *Config) validateSignals() error {
	kafka, err := c.SignalChannels()
	if err != nil {
		return err
	}
	if !kafka {
		if c.SignalKafkaTopic != "" {
			return fmt.Errorf("signal-kafka-topic is set but signal-enabled-channels does not include kafka; set CAPTURE_SIGNAL_ENABLED_CHANNELS=kafka")
		}
		return nil
	}
	if c.SignalKafkaTopic == "" && c.TopicPrefix != "" {
		c.SignalKafkaTopic = c.TopicPrefix + "-signal"
	}
	return nil
}
