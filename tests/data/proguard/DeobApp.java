// heapconv fixture: a small program that tests/it/deobfuscate.rs compiles, obfuscates with
// ProGuard (Debian libproguard-java) and runs: it prints the stack traces it captures (in
// obfuscated form, for ReTrace and heapconv to deobfuscate) and dumps its heap (HPROF).
package com.example.deob;

import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;

public class DeobApp {
    static final List<Object> KEEP = new ArrayList<>();

    public static void main(String[] args) throws Exception {
        Inventory inv = new Inventory("warehouse");
        for (int i = 0; i < 3; i++) {
            inv.addItem(new Item("item" + i, i * 10));
        }
        KEEP.add(inv);
        KEEP.add(new Cache(4));
        try (PrintStream out = new PrintStream(args[0])) {
            for (StackTraceElement[] trace : Tracer.capture(inv)) {
                out.println("java.lang.Throwable: captured");
                for (StackTraceElement e : trace) {
                    out.println("\tat " + e);
                }
            }
        }
        com.sun.management.HotSpotDiagnosticMXBean bean = ManagementFactory.getPlatformMXBean(
            com.sun.management.HotSpotDiagnosticMXBean.class);
        Tracer.dumpVia(bean, args[1]);
        System.out.println(KEEP.size());
    }
}

class Item {
    final String itemName;
    int itemPrice;
    Item next;

    Item(String name, int price) {
        this.itemName = name;
        this.itemPrice = price;
    }

    int priceWithTax() {
        return itemPrice + itemPrice / 5;
    }
}

class Inventory {
    static Inventory lastInventory;
    final String inventoryLabel;
    Item firstItem;
    int itemCount;

    Inventory(String label) {
        this.inventoryLabel = label;
        lastInventory = this;
    }

    void addItem(Item item) {
        item.next = firstItem;
        firstItem = item;
        itemCount++;
    }

    int totalValue(List<StackTraceElement[]> traces) {
        int sum = 0;
        for (Item i = firstItem; i != null; i = i.next) {
            sum += i.priceWithTax();
        }
        traces.add(new Throwable().getStackTrace());
        return sum;
    }
}

class Cache {
    final Object[] cacheSlots;
    long cacheHits;

    Cache(int size) {
        cacheSlots = new Object[size];
        for (int i = 0; i < size; i++) {
            cacheSlots[i] = new Item("cached" + i, i);
        }
    }

    Object lookup(int k, List<StackTraceElement[]> traces) {
        cacheHits++;
        traces.add(new Throwable().getStackTrace());
        return cacheSlots[k % cacheSlots.length];
    }
}

class Tracer {
    static List<StackTraceElement[]> capture(Inventory inv) {
        List<StackTraceElement[]> traces = new ArrayList<>();
        int v = inv.totalValue(traces);
        Cache c = new Cache(2);
        c.lookup(v, traces);
        deeper(3, traces);
        return traces;
    }

    static void deeper(int n, List<StackTraceElement[]> traces) {
        if (n == 0) {
            traces.add(new Throwable().getStackTrace());
            return;
        }
        deeper(n - 1, traces);
    }

    // The heap is dumped from here, so the dump's STACK_TRACE of the main thread has
    // obfuscated frames for hprof-conv --proguard-map to rename: dumpVia (called once: inlined
    // into main, an inline chain) and dumpFrom (recursive: kept, renamed).
    static void dumpVia(com.sun.management.HotSpotDiagnosticMXBean bean, String path) throws Exception {
        dumpFrom(2, bean, path);
    }

    static void dumpFrom(int n, com.sun.management.HotSpotDiagnosticMXBean bean, String path) throws Exception {
        if (n == 0) {
            bean.dumpHeap(path, true);
            return;
        }
        dumpFrom(n - 1, bean, path);
    }
}
