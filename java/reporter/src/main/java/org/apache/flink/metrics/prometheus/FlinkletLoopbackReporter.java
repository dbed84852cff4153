/* FlinkletLoopbackReporter: Flink's Prometheus reporter, serving on the loopback address only.
 *
 * Flink's PrometheusReporter binds every interface; flinklet scrapes this one on 127.0.0.1 and serves what it says
 * through its own endpoint (flinklet.http.address), so Flink's metrics reach nobody but flinklet directly. It lives in
 * Flink's package because AbstractPrometheusReporter's registry is package-private (the same in 1.20.x, 2.2.x and
 * 2.3.x: checked with javap). */
package org.apache.flink.metrics.prometheus;

import io.prometheus.client.exporter.HTTPServer;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;

/** Flink's Prometheus reporter on InetAddress.getLoopbackAddress() and one given port. */
public class FlinkletLoopbackReporter extends AbstractPrometheusReporter {
    private final HTTPServer server;

    FlinkletLoopbackReporter(int port) throws IOException {
        InetAddress loopback = InetAddress.getLoopbackAddress();
        // daemon threads: the endpoint never keeps the JVM alive once the job has ended
        server = new HTTPServer(new InetSocketAddress(loopback, port), registry, true);
        log.info("flinklet's loopback Prometheus reporter serves {}:{}", loopback.getHostAddress(), server.getPort());
    }

    int getPort() {
        return server.getPort();
    }

    @Override
    public void close() {
        server.stop();
        super.close();
    }
}
