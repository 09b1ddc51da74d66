package org.apache.uima.ducc.oracle;

import java.util.*;

import org.apache.uima.ducc.common.NodeIdentity;
import org.apache.uima.ducc.common.utils.id.DuccId;
import org.apache.uima.ducc.transport.event.RmStateDuccEvent;
import org.apache.uima.ducc.transport.event.common.*;
import org.apache.uima.ducc.transport.event.common.IDuccCompletionType.JobCompletionType;
import org.apache.uima.ducc.transport.event.common.IDuccCompletionType.ReservationCompletionType;
import org.apache.uima.ducc.transport.event.common.IDuccState.JobState;
import org.apache.uima.ducc.transport.event.common.IDuccState.ReservationState;
import org.apache.uima.ducc.transport.event.common.IDuccTypes.DuccType;
import org.apache.uima.ducc.transport.event.common.IDuccUnits.MemoryUnits;
import org.apache.uima.ducc.transport.event.common.IDuccWorkService.ServiceDeploymentType;
import org.apache.uima.ducc.transport.event.common.IProcessState.ProcessState;
import org.apache.uima.ducc.transport.event.common.IResourceState.ProcessDeallocationType;
import org.apache.uima.ducc.transport.event.common.IResourceState.ResourceState;
import org.apache.uima.ducc.transport.event.rm.IResource;
import org.apache.uima.ducc.transport.event.rm.IRmJobState;

/**
 * Simulated Orchestrator. Keeps its own model of every submitted piece of work and, on each publication,
 * builds a brand-new DuccWorkMap (fresh objects each time, as a deserialized OR message would be).
 * Written for the harness; the lifecycle below is what the fixtures show (see README "Simulated Orchestrator").
 *
 * Times come from the scenario "timing" block (defaults process_start_ms 5000, process_stop_ms 10000,
 * init_ms 30000). "pub" = an Orchestrator publication (every ducc.orchestrator.state.publish.rate).
 *  - DuccIds 1, 2, ... are given in submission order (stable: equal submit_ms keep the work order). A work's
 *    hash_bucket h (0 .. 65535) gives its DuccId a UUID whose hash is h: a hash map of the RM with 2^k buckets
 *    walks it in bucket h mod 2^k, after the work of lower buckets; its UUIDs compare in DuccId order.
 *  - a piece of work appears at the first pub at or after submit_ms: jobs in WaitingForDriver, services,
 *    managed reservations and reservations in Received; from the next pub on, WaitingForResources.
 *  - a share in the RM's Additions becomes a process (pid 10000, 10001, ... at the next pub, in job-id then
 *    share-id order): Starting until assign+process_start_ms, Initializing for init_ms, then Running. Open time
 *    windows end "now".
 *  - a share in Removals (preemption, purge, vary-off) keeps its state until removal+process_stop_ms, then
 *    Stopped; its in-flight work items go back to the front of the queue.
 *  - job work items: each Running process runs `threads` items at a time; item k (0-based, dispatch order)
 *    takes item_ms (a number) or item_ms[k % len] (a list) ms. With handout_ms (a list), the n-th hand-out
 *    (an item lost with its process and handed out again counts again) takes handout_ms[n] ms, later ones
 *    item_ms. items_done items were done before the harness's time 0 (counted, never handed out).
 *  - the mean item time reported: of the items' own durations; with report_ms (a list of [items, ms]
 *    segments in completion order), the n-th completion counts the n-th segment item's ms (later ones
 *    item_ms): a log's own means, apart from the durations that drive the completions.
 *  - the end of a job (all items done), of a service / managed reservation (duration_ms after its first
 *    process started Running) and a user cancel (cancel_ms) all go the same way: Completing at that pub, with
 *    every live process Stopping until then+process_stop_ms and Stopped after; Completed at the first pub with
 *    no live process. A canceled job/service also gets completion type CanceledByUser and its processes
 *    ResourceState Deallocated (JobCanceled / ServiceStopped), as OrchestratorComponent.stopJob/stopService do.
 *  - reservations: Assigned once the RM gave resources; Completed at the first pub at or after
 *    assignment+duration_ms, or at or after cancel_ms (CanceledByUser, as stopReservation does).
 *  - investment_order (per job, [ms, "host#k ..."] entries (k: the share's place among the job's on the host), each in force from its time on, less the top-level
 *    investment_order_tolerance_ms): where the job's live processes are exactly the shares named, the initialized
 *    ones report their investments (the same values, sorted) in that order, least first: a log's own order.
 *  - addition_order (per job, [ms, "host host ..."] entries, within investment_order_tolerance_ms of an RM publication):
 *    the processes that publication adds, where their hosts are the ones named, are numbered in the order named
 *    (a log's share-id order), not in the harness RM's share-id order: an item goes to the lower-numbered of two
 *    slots free at once, as in simulate's item fit.
 *  - a Completed piece of work is published three times in all (then it is gone from the map).
 *  - a refused job/reservation is published Completed at the next pub.
 */
public class OrSim {
    static final int P_BASE = 10000;
    static final int COMPLETED_PUBS = 3;

    final long startMs, stopMs, defInitMs, invTolerance, itemOrigin;
    int nextPid = P_BASE;

    class Proc {
        DuccId id; NodeIdentity ni; String node; int pid = -1, idx;
        long assign, remove = -1;
        boolean stopping = false;               // removed because the work is finishing (Completing)
        long initStart() { return assign + startMs; }
        long runStart(long initMs) { return initStart() + initMs; }
        long stopAt() { return remove < 0 ? Long.MAX_VALUE : remove + stopMs; }
        double[] slotFree;                      // work-item slots (one per thread): free from this item time
        boolean[] slotBusy;
    }

    class Work {
        int idx; DuccId id; String type, user, clazz, serviceType, description; long mem, threads, submit, items, initMs, duration, cancel;
        long itemMs; long[] itemList; double[] handouts; double[][] report;
        double itemStart = Double.NaN, itemInit = Double.NaN;    // item_start_ms / item_init_ms (exact)
        double itemMean;                        // item_mean_ms (exact), else item_ms: past handout_ms and report_ms
        long handed = 0; int segment = 0; long segmentUsed = 0;
        int bucket = -1;                        // hash_bucket, -1: the seeded UUID
        TreeMap<Long, String[]> invOrder;        // investment_order: from this time, the shares least invested first
        TreeMap<Long, String[]> addOrder;        // addition_order: the hosts of the processes added then, numbered in that order
        String processesMax;
        boolean seen = false, refused = false, everRunning = false, canceled = false;
        long completingAt = -1, assignedAt = -1;
        int completedPubs = 0;                  // Completed publications so far
        LinkedHashMap<DuccId, Proc> procs = new LinkedHashMap<>();
        List<Object[]> reservations = new ArrayList<>();      // {DuccId, NodeIdentity, bytes}
        // work items
        long nextItem = 0, done = 0;
        double doneMs = 0, minMs = Double.MAX_VALUE, maxMs = 0;
        ArrayDeque<long[]> requeued = new ArrayDeque<>();     // {item, available-from}
        List<double[]> inflight = new ArrayList<>();          // {procIndex, slot, end, item, duration, start}
        List<Proc> procList = new ArrayList<>();

        boolean isJob() { return "job".equals(type); }
        boolean isAp() { return "ap".equals(type) || "managed_reservation".equals(type); }
        boolean isReservation() { return "reservation".equals(type); }
        DuccType duccType() { return isJob() ? DuccType.Job : isReservation() ? DuccType.Reservation : DuccType.Service; }
        String name() { return description != null ? description : type + "-" + id.getFriendly(); }
        double itemDuration(long k) {
            if (handouts != null) { long n = handed++; return n < handouts.length ? handouts[(int) n] : itemMean; }
            return itemList != null ? itemList[(int) (k % itemList.length)] : itemMs;
        }
        /** What one more completion adds to the reported mean (`took`: the item's own duration). */
        double reported(double took) {
            if (report == null) return took;
            while (segment < report.length && segmentUsed >= (long) report[segment][0]) { segment++; segmentUsed = 0; }
            if (segment >= report.length) return itemMean;
            segmentUsed++;
            return report[segment][1];
        }
        void complete(double took) {
            double r = reported(took);
            done++; doneMs += r;
            minMs = Math.min(minMs, r); maxMs = Math.max(maxMs, r);
        }
        boolean gone() { return completedPubs >= COMPLETED_PUBS; }
    }

    final List<Work> works = new ArrayList<>();
    final Map<Long, Work> byId = new HashMap<>();

    @SuppressWarnings("unchecked")
    OrSim(Map<String, Object> scen, List<Oracle.SimNode> nodes) {
        Map<String, Object> timing = (Map<String, Object>) scen.getOrDefault("timing", new HashMap<>());
        startMs = Oracle.num(timing.get("process_start_ms"), 5000);
        stopMs = Oracle.num(timing.get("process_stop_ms"), 10000);
        defInitMs = Oracle.num(timing.get("init_ms"), 30000);
        invTolerance = Oracle.num(scen.get("investment_order_tolerance_ms"), 0);
        itemOrigin = Oracle.num(scen.get("item_origin_ms"), 0);
        int i = 0;
        List<Work> bySubmit = new ArrayList<>();
        for (Object o : (List<Object>) scen.get("work")) {
            Map<String, Object> m = (Map<String, Object>) o;
            Work w = new Work();
            w.idx = i++;
            w.type = ((String) m.getOrDefault("type", "job")).toLowerCase();
            w.user = (String) m.getOrDefault("user", "user");
            w.clazz = (String) m.get("class");
            w.description = (String) m.get("description");
            w.mem = Oracle.num(m.get("memory_gb"), 4);
            w.threads = Oracle.num(m.get("threads"), 4);
            w.submit = Oracle.num(m.get("submit_ms"), 0);
            w.items = Oracle.num(m.get("items"), 0);
            Object im = m.get("item_ms");
            if (im instanceof List) {
                List<Object> l = (List<Object>) im;
                w.itemList = new long[l.size()];
                for (int k = 0; k < l.size(); k++) w.itemList[k] = Oracle.num(l.get(k), 60000);
                if (w.itemList.length == 0) { w.itemList = null; w.itemMs = 60000; }
            } else w.itemMs = Oracle.num(im, 60000);
            if (m.get("handout_ms") instanceof List) {
                List<Object> l = (List<Object>) m.get("handout_ms");
                w.handouts = new double[l.size()];
                for (int k = 0; k < l.size(); k++) w.handouts[k] = ((Number) l.get(k)).doubleValue();
            }
            if (m.get("report_ms") instanceof List) {
                List<Object> l = (List<Object>) m.get("report_ms");
                w.report = new double[l.size()][];
                for (int k = 0; k < l.size(); k++) {
                    List<Object> seg = (List<Object>) l.get(k);
                    w.report[k] = new double[] { ((Number) seg.get(0)).doubleValue(), ((Number) seg.get(1)).doubleValue() };
                }
            }
            w.invOrder = LogOrders.investmentOrder(m.get("investment_order"));
            w.addOrder = LogOrders.investmentOrder(m.get("addition_order"));
            w.itemMean = m.get("item_mean_ms") != null ? ((Number) m.get("item_mean_ms")).doubleValue() : w.itemMs;
            if (m.get("item_start_ms") != null) w.itemStart = ((Number) m.get("item_start_ms")).doubleValue();
            if (m.get("item_init_ms") != null) w.itemInit = ((Number) m.get("item_init_ms")).doubleValue();
            w.bucket = (int) Oracle.num(m.get("hash_bucket"), -1);
            long before = Oracle.num(m.get("items_done"), 0);
            for (long k = 0; k < before; k++) w.complete(w.itemMean);
            w.nextItem = before;
            w.initMs = Oracle.num(m.get("init_ms"), defInitMs);
            w.duration = Oracle.num(m.get("duration_ms"), -1);
            w.cancel = Oracle.num(m.get("cancel_ms"), -1);
            w.serviceType = (String) m.get("service_type");
            Object pm = m.get("processes_max");
            w.processesMax = pm == null ? "0" : String.valueOf(Oracle.num(pm, 0));
            works.add(w);
            bySubmit.add(w);
        }
        bySubmit.sort(Comparator.comparingLong(w -> w.submit));          // stable: ties keep the work order
        for (int k = 0; k < bySubmit.size(); k++) {
            Work w = bySubmit.get(k);
            w.id = new DuccId(k + 1);
            if (w.bucket >= 0) w.id.setUUID(LogOrders.bucketUuid(w.bucket, k + 1));
            byId.put((long) (k + 1), w);
        }
        works.sort(Comparator.comparingLong(w -> w.id.getFriendly()));
    }

    /** The RM published a schedule at time t. */
    void rmState(RmStateDuccEvent ev, long t) {
        for (Map.Entry<DuccId, IRmJobState> e : ev.getJobState().entrySet()) {
            Work w = byId.get(e.getKey().getFriendly());
            if (w == null) continue;
            IRmJobState js = e.getValue();
            if (js.isRefused()) { w.refused = true; continue; }
            if (w.isReservation()) {
                if (w.reservations.isEmpty() && js.getResources() != null && !js.getResources().isEmpty()) {
                    for (IResource r : sorted(js.getResources()))
                        w.reservations.add(new Object[] { r.getId(), r.getNodeId(), w.mem * 1024L * 1024L * 1024L });
                    w.assignedAt = t;
                }
                continue;
            }
            if (js.getPendingAdditions() != null) {
                List<Proc> added = new ArrayList<>();
                for (IResource r : sorted(js.getPendingAdditions()))
                    if (!w.procs.containsKey(r.getId())) {
                        Proc p = new Proc(); p.id = r.getId(); p.ni = r.getNodeId(); p.node = p.ni.getCanonicalName(); p.assign = t;
                        w.procs.put(p.id, p);
                        added.add(p);
                    }
                for (Proc p : LogOrders.inAdditionOrder(added, w.addOrder, t, invTolerance)) {
                    p.idx = w.procList.size();
                    w.procList.add(p);
                }
            }
            if (js.getPendingRemovals() != null)
                for (IResource r : sorted(js.getPendingRemovals())) {
                    Proc p = w.procs.get(r.getId());
                    if (p != null && p.remove < 0) removeProc(w, p, t, false);
                }
        }
    }

    static List<IResource> sorted(Map<DuccId, IResource> m) {
        List<IResource> l = new ArrayList<>(m.values());
        l.sort(Comparator.comparingLong(r -> r.getId().getFriendly()));
        return l;
    }

    /** Process p of w goes away at t (its in-flight items go back to the queue). */
    void removeProc(Work w, Proc p, long t, boolean stopping) {
        simItems(w, t);
        p.remove = t;
        p.stopping = stopping;
        int pi = p.idx;
        List<double[]> lost = new ArrayList<>();
        for (Iterator<double[]> it = w.inflight.iterator(); it.hasNext(); ) {
            double[] x = it.next();
            if (x[0] == pi) { it.remove(); lost.add(x); }
        }
        lost.sort((a, b) -> Double.compare(b[3], a[3]));
        for (double[] x : lost) w.requeued.addFirst(new long[] { (long) x[3], t });
    }

    ProcessState pstate(Work w, Proc p, long t) {
        if (t >= p.stopAt()) return ProcessState.Stopped;
        if (p.stopping) return ProcessState.Stopping;
        if (t < p.initStart()) return ProcessState.Starting;
        if (t < p.runStart(w.initMs)) return ProcessState.Initializing;
        return ProcessState.Running;
    }

    /** When a process's threads may take items, on the item clock (harness ms less item_origin_ms): with
     *  item_start_ms / item_init_ms, summed in the order simulate's loop sums them (ties between slots decide
     *  hand-outs, and a fitted hand-out time reproduces its completion only on the same sums). */
    double slotsFrom(Work w, Proc p) {
        if (Double.isNaN(w.itemStart) || Double.isNaN(w.itemInit)) return p.runStart(w.initMs) - itemOrigin;
        return ((double) (p.assign - itemOrigin) + w.itemStart) + w.itemInit;
    }

    /**
     * Advance the work-item model of a job to time t: each thread (slot) of a Running process runs one item
     * at a time; items are handed out in order (re-queued items first, not before they were lost) to the slot
     * free first (ties: the older process, then the lower slot); a completion at or before the next hand-out
     * goes first. Item times are doubles on the item clock (harness ms less item_origin_ms).
     */
    void simItems(Work w, long t) {
        if (!w.isJob()) return;
        for (Proc p : w.procList) if (p.slotFree == null) {
            p.slotFree = new double[(int) w.threads]; p.slotBusy = new boolean[(int) w.threads];
            Arrays.fill(p.slotFree, slotsFrom(w, p));
        }
        double now = (double) (t - itemOrigin);
        while (true) {
            double[] fin = null;            // earliest completion: (end, process, slot)
            for (double[] x : w.inflight)
                if (fin == null || x[2] < fin[2] || (x[2] == fin[2] && (x[0] < fin[0] || (x[0] == fin[0] && x[1] < fin[1])))) fin = x;
            boolean haveItem = !w.requeued.isEmpty() || w.nextItem < w.items;
            int bp = -1, bs = -1; double bf = Double.MAX_VALUE;
            if (haveItem)
                for (int pi = 0; pi < w.procList.size(); pi++) {
                    Proc p = w.procList.get(pi);
                    if (p.remove >= 0 || p.slotFree == null) continue;
                    for (int s = 0; s < p.slotFree.length; s++)
                        if (!p.slotBusy[s] && p.slotFree[s] < bf) { bf = p.slotFree[s]; bp = pi; bs = s; }
                }
            double start = Double.NaN;
            if (bp >= 0) {
                start = bf;
                if (!w.requeued.isEmpty() && w.requeued.peekFirst()[1] - itemOrigin > start) start = w.requeued.peekFirst()[1] - itemOrigin;
                if (start > now) start = Double.NaN;
            }
            if (fin != null && fin[2] <= now && (Double.isNaN(start) || fin[2] <= start)) {
                w.inflight.remove(fin);
                Proc p = w.procList.get((int) fin[0]);
                p.slotBusy[(int) fin[1]] = false;
                p.slotFree[(int) fin[1]] = fin[2];
                w.complete(fin[4]);
                continue;
            }
            if (Double.isNaN(start)) break;
            long k = !w.requeued.isEmpty() ? w.requeued.pollFirst()[0] : w.nextItem++;
            double d = w.itemDuration(k);
            Proc p = w.procList.get(bp);
            p.slotBusy[bs] = true;
            w.inflight.add(new double[] { bp, bs, start + d, k, d, start });
        }
    }

    /**
     * The process's investment in its active work items at t (IDuccProcess.getWiMillisInvestment(), which the
     * RM's SHRINK_BY_INVESTMENT eviction sorts on). The real JD reports, per process, how long one of its active
     * items has been running; the harness reports the youngest active item's age (0 when none is active).
     */
    long investment(Work w, Proc p, long t) {
        long min = Long.MAX_VALUE;
        double now = (double) (t - itemOrigin);
        for (double[] x : w.inflight) if (x[0] == p.idx && x[5] <= now) min = Math.min(min, (long) (now - x[5]));
        return min == Long.MAX_VALUE ? 0 : min;
    }

    /** Investment per process at t: investment(), or, where investment_order names exactly the live processes,
     *  the same values sorted (made strictly increasing) given to the initialized ones in the order named. */
    Map<Proc, Long> investments(Work w, List<Proc> ps, long t) {
        Map<Proc, Long> out = new HashMap<>();
        for (Proc p : ps) out.put(p, investment(w, p, t));
        return w.invOrder == null ? out : LogOrders.inOrder(out, w.invOrder.floorEntry(t + invTolerance), ps, t);
    }

    TimeWindow window(long start, long end) {
        TimeWindow tw = new TimeWindow();
        tw.setStartLong(SimClock.EPOCH + start);
        tw.setEndLong(SimClock.EPOCH + end);
        return tw;
    }

    /** True once every piece of work except JobDriver reservations has been submitted and has left the map
     *  (its last Completed publication is behind us). */
    boolean idle() {
        for (Work w : works) {
            if (w.isReservation() && "JobDriver".equals(w.clazz)) continue;
            if (!w.gone()) return false;
        }
        return true;
    }

    /** Build the Orchestrator's publication at time t. */
    IDuccWorkMap publish(long t) {
        DuccWorkMap map = new DuccWorkMap();
        for (Work w : works) {
            if (t < w.submit || w.gone()) continue;
            boolean first = !w.seen;
            w.seen = true;
            // pids for new processes, job-id then share-id order
            List<Proc> ps = new ArrayList<>(w.procs.values());
            ps.sort(Comparator.comparingLong(p -> p.id.getFriendly()));
            for (Proc p : ps) if (p.pid < 0) p.pid = nextPid++;
            // a process the RM added after the work started finishing is stopped at once
            if (w.completingAt >= 0) for (Proc p : ps) if (p.remove < 0) removeProc(w, p, t, true);
            IDuccWork dw = w.isReservation() ? reservation(w, t, first) : executable(w, t, first, ps);
            if (dw != null) map.addDuccWork(dw);
        }
        return map;
    }

    IDuccWork reservation(Work w, long t, boolean first) {
        DuccWorkReservation r = new DuccWorkReservation(w.id);
        r.setDuccType(DuccType.Reservation);
        r.setStandardInfo(standard(w));
        r.setSchedulingInfo(scheduling(w));
        ReservationState st;
        if (w.completedPubs > 0) st = ReservationState.Completed;
        else if (first) st = ReservationState.Received;
        else if (w.refused) st = ReservationState.Completed;
        else if (w.cancel >= 0 && t >= w.cancel) { st = ReservationState.Completed; w.canceled = true; }
        else if (w.reservations.isEmpty()) st = ReservationState.WaitingForResources;
        else if (w.duration > 0 && t >= w.assignedAt + w.duration) st = ReservationState.Completed;
        else st = ReservationState.Assigned;
        if (st == ReservationState.Completed) {
            w.completedPubs++;
            if (w.canceled) r.setCompletionType(ReservationCompletionType.CanceledByUser);
        }
        r.setReservationState(st);
        DuccReservationMap rmap = new DuccReservationMap();
        for (Object[] x : w.reservations) rmap.addReservation(Compat.make(DuccReservation.class, (DuccId) x[0], (NodeIdentity) x[1], (Long) x[2]));
        r.setReservationMap(rmap);
        return r;
    }

    /** When the work ends by itself (-1: not yet): all items done, or duration_ms after its first process ran. */
    boolean naturalEnd(Work w, long t) {
        if (w.isJob()) return w.items > 0 && w.done >= w.items;
        if (w.duration <= 0 || w.procList.isEmpty()) return false;
        Proc p0 = w.procList.get(0);
        return t >= p0.runStart(w.initMs) + w.duration;
    }

    IDuccWork executable(Work w, long t, boolean first, List<Proc> ps) {
        boolean isJob = w.isJob();
        DuccWorkJob j = new DuccWorkJob(w.id);
        j.setDuccType(w.duccType());
        if (!isJob) {
            j.setServiceDeploymentType(w.isAp() ? ServiceDeploymentType.other
                                      : "custom".equals(w.serviceType) ? ServiceDeploymentType.custom : ServiceDeploymentType.uima);
            if (!w.isAp()) j.setServiceId(String.valueOf(w.id.getFriendly()));   // only real services have an SM service id
        }
        j.setStandardInfo(standard(w));
        DuccSchedulingInfo si = scheduling(w);
        j.setSchedulingInfo(si);
        simItems(w, t);

        // does the work start finishing at this publication?
        if (!first && w.completingAt < 0 && w.completedPubs == 0 && !w.refused) {
            boolean cancel = w.cancel >= 0 && t >= w.cancel;
            if (cancel || naturalEnd(w, t)) {
                w.completingAt = t;
                w.canceled = cancel && !naturalEnd(w, t);
                for (Proc p : ps) if (p.remove < 0) removeProc(w, p, t, true);
            }
        }

        boolean anyAlive = false, anyRunning = false;
        DuccProcessMap pm = new DuccProcessMap();
        Map<Proc, Long> invested = isJob ? investments(w, ps, t) : null;
        for (Proc p : ps) {
            ProcessState s = pstate(w, p, t);
            DuccProcess dp = new DuccProcess(p.id, p.ni);
            dp.setPID(String.valueOf(p.pid));
            dp.setProcessState(s);
            dp.setResidentMemory(w.mem * 1024L * 1024L * 1024L / 2);
            if (isJob) dp.setWiMillisInvestment(invested.get(p));
            if (w.canceled && p.stopping) {
                dp.setResourceState(ResourceState.Deallocated);
                dp.setProcessDeallocationType(isJob ? ProcessDeallocationType.JobCanceled
                    : Compat.constant(ProcessDeallocationType.class, "ServiceStopped", "Canceled"));
            }
            long is = p.initStart(), rs = p.runStart(w.initMs), end = Math.min(t, p.stopAt());
            if (end > is) dp.setTimeWindowInit(window(is, Math.min(end, rs)));
            if (end > rs) dp.setTimeWindowRun(window(rs, end));
            pm.addProcess(dp);
            if (s != ProcessState.Stopped) anyAlive = true;
            if (s == ProcessState.Running) anyRunning = true;
        }
        j.setProcessMap(pm);
        JobState st;
        if (w.completedPubs > 0) st = JobState.Completed;
        else if (first) st = isJob ? JobState.WaitingForDriver : JobState.Received;
        else if (w.refused) st = JobState.Completed;
        else if (w.completingAt >= 0) {
            // Completing at the pub where it starts finishing (even without processes), Completed once none is alive
            st = (anyAlive || w.completingAt == t) ? JobState.Completing : JobState.Completed;
        }
        else if (ps.isEmpty()) st = JobState.WaitingForResources;
        else if (w.everRunning || anyRunning) { st = JobState.Running; w.everRunning = true; }
        else st = JobState.Initializing;
        if (st == JobState.Completed) w.completedPubs++;
        j.setJobState(st);
        if (w.canceled && (st == JobState.Completing || st == JobState.Completed)) j.setCompletionType(JobCompletionType.CanceledByUser);
        if (isJob) {
            si.setWorkItemsCompleted(String.valueOf(w.done));
            if (w.done > 0) {
                double mean = w.doneMs / w.done;
                si.setPerWorkItemStatistics(new DuccPerWorkItemStatistics(w.maxMs, w.minMs, mean, 0));
                Compat.setIfPresent(si, mean, "setAvgTimeForWorkItemsSkewedByActive");
            }
        }
        return j;
    }

    DuccStandardInfo standard(Work w) {
        DuccStandardInfo s = new DuccStandardInfo();
        s.setUser(w.user);
        s.setDescription(w.name());
        s.setDateOfSubmission(String.valueOf(SimClock.EPOCH + w.submit));
        return s;
    }

    DuccSchedulingInfo scheduling(Work w) {
        DuccSchedulingInfo si = new DuccSchedulingInfo();
        if (w.clazz != null) si.setSchedulingClass(w.clazz);
        Compat.set(si, String.valueOf(w.mem), "setMemorySizeRequested", "setShareMemorySize");
        Compat.set(si, MemoryUnits.GB, "setMemoryUnits", "setShareMemoryUnits");
        if (w.isJob()) {
            Compat.set(si, String.valueOf(w.threads), "setThreadsPerProcess", "setThreadsPerShare");
            si.setWorkItemsTotal(String.valueOf(w.items));
            si.setWorkItemsCompleted("0");
            si.setWorkItemsError("0");
            Compat.set(si, w.processesMax, "setProcessesMax", "setSharesMax");
        } else if (!w.isReservation()) {
            Compat.set(si, String.valueOf(w.threads), "setThreadsPerProcess", "setThreadsPerShare");
        }
        return si;
    }
}
