/* FlinkletLoopbackReporterFactory: makes FlinkletLoopbackReporter for
 * metrics.reporter.<name>.factory.class, with metrics.reporter.<name>.port (required: flinklet picks a free one). */
package org.apache.flink.metrics.prometheus;

import org.apache.flink.metrics.reporter.MetricReporter;
import org.apache.flink.metrics.reporter.MetricReporterFactory;

import java.io.IOException;
import java.util.Properties;

/** The factory Flink finds through META-INF/services. */
public class FlinkletLoopbackReporterFactory implements MetricReporterFactory {
    static final String PORT = "port";

    @Override
    public MetricReporter createMetricReporter(Properties properties) {
        String text = properties.getProperty(PORT);
        if (text == null) {
            throw new IllegalArgumentException("flinklet's Prometheus reporter needs a port (metrics.reporter.<name>.port)");
        }
        int port;
        try {
            port = Integer.parseInt(text.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("flinklet's Prometheus reporter: port is not a number: " + text, e);
        }
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("flinklet's Prometheus reporter: port out of range: " + port);
        }
        try {
            return new FlinkletLoopbackReporter(port);
        } catch (IOException e) {
            throw new IllegalStateException("flinklet's Prometheus reporter could not listen on the loopback port " + port, e);
        }
    }
}
