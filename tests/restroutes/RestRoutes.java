// RestRoutes: every REST route Flink's jars declare, for tests/restroutes/test_restroutes.py (issue 36).
//
// Scans the jars of a lib/ directory (build/flink-<version>/lib) for the classes that implement Flink's
// org.apache.flink.runtime.rest.handler.RestHandlerSpecification (every *Headers class of the REST API and the
// web UI's: MessageHeaders, UntypedResponseMessageHeaders, the log and file handlers' specifications), makes
// each through its static getInstance() or its no-argument constructor, and prints one line per route:
//     ROUTE <METHOD> <url template> <class>
// and one line per class it could not make (NOINSTANCE <class> <why>), sorted. Everything through reflection,
// so one compiled class reads every Flink version. Exit 0, or 2 when the jars hold no specification at all.
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

public final class RestRoutes {
    private static final String SPEC = "org.apache.flink.runtime.rest.handler.RestHandlerSpecification";

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: RestRoutes <flink lib directory>");
            System.exit(64);
        }
        List<Path> jars = new ArrayList<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(Paths.get(args[0]), "*.jar")) {
            for (Path p : ds) jars.add(p);
        }
        List<URL> urls = new ArrayList<>();
        for (Path p : jars) urls.add(p.toUri().toURL());
        URLClassLoader cl = new URLClassLoader(urls.toArray(new URL[0]), ClassLoader.getPlatformClassLoader());
        Class<?> spec = Class.forName(SPEC, false, cl);
        Method method = spec.getMethod("getHttpMethod");
        Method url = spec.getMethod("getTargetRestEndpointURL");
        TreeSet<String> out = new TreeSet<>();
        int specs = 0;
        for (Path jar : jars) {
            try (JarFile jf = new JarFile(jar.toFile())) {
                for (Enumeration<JarEntry> e = jf.entries(); e.hasMoreElements(); ) {
                    String n = e.nextElement().getName();
                    if (!n.startsWith("org/apache/flink/") || !n.endsWith(".class") || n.contains("/shaded/"))
                        continue;
                    String name = n.substring(0, n.length() - 6).replace('/', '.');
                    Class<?> c;
                    try {
                        c = Class.forName(name, false, cl);
                        if (!spec.isAssignableFrom(c) || c.isInterface() || Modifier.isAbstract(c.getModifiers())
                                || c.isAnonymousClass())
                            continue;
                    } catch (Throwable t) {
                        continue; // a class whose dependencies are not in lib/: not one the REST server loads
                    }
                    specs++;
                    Object inst;
                    try {
                        inst = instance(c);
                    } catch (Throwable t) {
                        Throwable cause = t.getCause() != null ? t.getCause() : t;
                        out.add("NOINSTANCE " + name + " " + cause.getClass().getSimpleName());
                        continue;
                    }
                    if (inst == null) {
                        out.add("NOINSTANCE " + name + " no-getInstance-or-constructor");
                        continue;
                    }
                    out.add("ROUTE " + method.invoke(inst) + " " + url.invoke(inst) + " " + name);
                }
            }
        }
        for (String line : out) System.out.println(line);
        System.exit(specs == 0 ? 2 : 0);
    }

    private static Object instance(Class<?> c) throws Exception {
        try {
            Method m = c.getDeclaredMethod("getInstance");
            if (Modifier.isStatic(m.getModifiers()) && m.getParameterCount() == 0) {
                m.setAccessible(true);
                return m.invoke(null);
            }
        } catch (NoSuchMethodException e) {
            // the constructor, then
        }
        try {
            Constructor<?> k = c.getDeclaredConstructor();
            k.setAccessible(true);
            return k.newInstance();
        } catch (NoSuchMethodException e) {
            return null;
        }
    }
}
