// A small Java program whose heap is known, for tests/hprof.rs: compiled and run by the test
// (OpenJDK's javac and java), it builds the objects below and dumps its heap to args[0] with
// HotSpotDiagnosticMXBean.dumpHeap(path, live = true), which writes JAVA PROFILE 1.0.2 with
// 8-byte identifiers on a 64-bit JVM; with a second argument, it first writes the JVM's class
// histogram (jcmd GC.class_histogram) there.

import com.sun.management.HotSpotDiagnosticMXBean;
import java.lang.management.ManagementFactory;
import java.lang.ref.WeakReference;

public class HeapFixture {
    /** A singly linked list node. */
    static final class Node {
        Node next;
        int value;

        Node(int value, Node next) {
            this.value = value;
            this.next = next;
        }
    }

    /** A class that extends another, to check field layout across a superclass. */
    static class Base {
        Object baseRef;
        long baseValue = 7;
    }

    static final class Derived extends Base {
        Object derivedRef;
        int derivedValue = 9;
    }

    static final int NODES = 1000;
    static final int NUMBERS = 12345;

    static Node head;
    static int[] numbers;
    static String[] names;
    static Derived derived;
    static WeakReference<Node> weak;

    public static void main(String[] args) throws Exception {
        Node n = null;
        for (int i = NODES - 1; i >= 0; i--) {
            n = new Node(i, n);
        }
        head = n;
        numbers = new int[NUMBERS];
        for (int i = 0; i < NUMBERS; i++) {
            numbers[i] = i;
        }
        names = new String[] {"alpha-heapconv", "beta-heapconv", new String("gamma-heapconv")};
        derived = new Derived();
        derived.baseRef = names;
        derived.derivedRef = numbers;
        weak = new WeakReference<>(head.next);
        HotSpotDiagnosticMXBean bean = ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class);
        if (args.length > 1) {
            // The JVM's own class histogram (what `jcmd PID GC.class_histogram` prints: instances
            // and bytes per class, in this JVM's object layout), for the object-size oracle.
            Object histogram = ManagementFactory.getPlatformMBeanServer().invoke(
                    new javax.management.ObjectName("com.sun.management:type=DiagnosticCommand"),
                    "gcClassHistogram",
                    new Object[] {new String[0]},
                    new String[] {String[].class.getName()});
            java.nio.file.Files.writeString(java.nio.file.Path.of(args[1]), (String) histogram);
        }
        bean.dumpHeap(args[0], true);
        // Keep everything reachable until the dump is written.
        if (head.value != 0 || numbers.length != NUMBERS || derived == null || weak.get() == null) {
            throw new AssertionError();
        }
    }
}
