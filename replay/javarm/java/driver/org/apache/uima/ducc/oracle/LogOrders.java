package org.apache.uima.ducc.oracle;

import java.util.*;

/**
 * Orders a log shows that the harness is given (rmreplay simulate --rm; replay/javarm/order.py): the hash
 * order of jobs (a UUID per hash_bucket), the investment order of a job's shares (investment_order) and the
 * order of the processes added at once (addition_order).
 */
final class LogOrders {
    private LogOrders() { }

    /** A version-4 UUID whose DuccId hash (31 + the UUID's hash) is `bucket` and whose high bits are `n`; below
     *  2^16 HashMap's spread (h ^ h >>> 16) leaves the hash as is: a map of 2^k buckets puts it in bucket mod 2^k. */
    static UUID bucketUuid(int bucket, long n) {
        long msb = (n << 32) | 0x4000L, high = 0x80000000L;
        int want = bucket - 31;                  // UUID.hashCode() = (int) (hilo >> 32) ^ (int) hilo, hilo = msb ^ lsb
        long low = (want ^ (int) (n ^ high) ^ 0x4000) & 0xFFFFFFFFL;
        return new UUID(msb, (high << 32) | low);
    }

    /** A work's investment_order ([ms, "host#k ..."] entries) by time, or null. */
    @SuppressWarnings("unchecked")
    static TreeMap<Long, String[]> investmentOrder(Object given) {
        if (!(given instanceof List)) return null;
        TreeMap<Long, String[]> out = new TreeMap<>();
        for (Object e : (List<Object>) given) {
            List<Object> l = (List<Object>) e;
            String names = ((String) l.get(1)).trim();
            out.put(Oracle.num(l.get(0), 0), names.isEmpty() ? new String[0] : names.split(" "));
        }
        return out;
    }

    /** The processes `added` at t (in the RM's share-id order), in the order of the addition_order entry within
     *  `tolerance` of t where it names exactly their hosts (a host named twice: its processes in share-id order). */
    static List<OrSim.Proc> inAdditionOrder(List<OrSim.Proc> added, TreeMap<Long, String[]> order, long t, long tolerance) {
        if (order == null || added.size() < 2) return added;
        Map.Entry<Long, String[]> e = order.floorEntry(t + tolerance);
        if (e == null || e.getKey() < t - tolerance || e.getValue().length != added.size()) return added;
        List<OrSim.Proc> left = new ArrayList<>(added), out = new ArrayList<>();
        for (String host : e.getValue()) {
            OrSim.Proc found = null;
            for (OrSim.Proc p : left) if (p.node.equals(host)) { found = p; break; }
            if (found == null) return added;
            left.remove(found);
            out.add(found);
        }
        return out;
    }

    /** The investments `out` with, where the entry in force names exactly the live processes, the same values
     *  sorted (made strictly increasing) given to the initialized ones in the order named. */
    static Map<OrSim.Proc, Long> inOrder(Map<OrSim.Proc, Long> out, Map.Entry<Long, String[]> e, List<OrSim.Proc> ps, long t) {
        if (e == null) return out;
        // a process is named host#k: its place among the job's live processes on its host, by share id
        Map<String, OrSim.Proc> live = new HashMap<>();
        Map<String, Integer> onHost = new HashMap<>();
        List<OrSim.Proc> byId = new ArrayList<>();
        for (OrSim.Proc p : ps) if (t < p.stopAt()) byId.add(p);
        byId.sort(Comparator.comparingLong(p -> p.id.getFriendly()));
        for (OrSim.Proc p : byId) {
            int k = onHost.merge(p.node, 1, Integer::sum) - 1;
            live.put(p.node + "#" + k, p);
        }
        if (live.size() != e.getValue().length) return out;
        List<OrSim.Proc> ordered = new ArrayList<>();
        for (String name : e.getValue()) {
            OrSim.Proc p = live.get(name);
            if (p == null) return out;
            if (t > p.initStart()) ordered.add(p);
        }
        List<Long> values = new ArrayList<>();
        for (OrSim.Proc p : ordered) values.add(out.get(p));
        Collections.sort(values);
        long prev = -1;
        for (int k = 0; k < ordered.size(); k++) {
            prev = Math.max(values.get(k), prev + 1);
            out.put(ordered.get(k), prev);
        }
        return out;
    }
}
