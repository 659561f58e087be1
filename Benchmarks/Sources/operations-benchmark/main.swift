// Benchmark: each workload on Operations, Foundation's OperationQueue and raw Dispatch,
// interleaved in rounds in one process; prints medians, ratios and the targets.
//
//   swift run -c release --package-path Benchmarks operations-benchmark          # the full table (≈1–2 min)
//   swift run -c release --package-path Benchmarks operations-benchmark --quick  # small N, one round: checks only
import Foundation

let arguments = CommandLine.arguments.dropFirst()

// Child mode: measure pending memory alone in a fresh process.
if let which = arguments.drop(while: { $0 != "--memory" }).dropFirst().first,
   let n = Int(arguments.drop(while: { $0 != "--n" }).dropFirst().first ?? "") {
    print(which == "Foundation" ? Workloads<FoundationQueue>.pendingMemory(n) : Workloads<OursQueue>.pendingMemory(n))
    exit(0)
}
if let which = arguments.drop(while: { $0 != "--async-memory" }).dropFirst().first,
   let n = Int(arguments.drop(while: { $0 != "--n" }).dropFirst().first ?? "") {
    print(which == "tasks" ? AsyncWorkloads.suspendedTaskMemory(n) : AsyncWorkloads.suspendedMemory(n))
    exit(0)
}
do {
    try checkAllocationCounter()
} catch {
    print("CHECK FAILED: \(error)")
    exit(1)
}
let quick = arguments.contains("--quick")
let rounds = quick ? 1 : Int(arguments.drop { $0 != "--rounds" }.dropFirst().first ?? "") ?? 7
let scale = quick ? 20 : 1

/// One implementation's run of a workload at some N.
struct Runner {
    let n: Int
    let run: (Int) throws -> UInt64
}

struct Workload {
    let name: String
    let ours: Runner
    let foundation: Runner?
    let dispatch: Runner?
    /// Also measured at 2N, for growth.
    let doubles: Bool
}

func r(_ n: Int, _ run: @escaping (Int) throws -> UInt64) -> Runner { Runner(n: max(n / scale, 10), run: run) }

typealias O = Workloads<OursQueue>
typealias F = Workloads<FoundationQueue>
typealias D = DispatchWorkloads

// Foundation's dependency graphs are quadratic: they get a smaller N so that a run ends.
let workloads: [Workload] = [
    Workload(name: "tiny", ours: r(200_000, O.tiny), foundation: r(200_000, F.tiny), dispatch: r(200_000, D.tiny), doubles: false),
    Workload(name: "tiny-blockop", ours: r(200_000, O.tinyBlockOperations), foundation: r(200_000, F.tinyBlockOperations), dispatch: r(200_000, D.tiny), doubles: false),
    Workload(name: "serial", ours: r(200_000, O.serial), foundation: r(200_000, F.serial), dispatch: r(200_000, D.serial), doubles: false),
    Workload(name: "chain", ours: r(100_000, O.chain), foundation: r(2_000, F.chain), dispatch: nil, doubles: true),
    Workload(name: "fanin", ours: r(100_000, O.fanIn), foundation: r(4_000, F.fanIn), dispatch: r(100_000, D.fanIn), doubles: true),
    Workload(name: "fanout", ours: r(100_000, O.fanOut), foundation: r(4_000, F.fanOut), dispatch: r(100_000, D.fanOut), doubles: true),
    Workload(name: "diamond", ours: r(64_000, { try O.diamond($0) }), foundation: r(2_048, { try F.diamond($0) }), dispatch: nil, doubles: true),
    Workload(name: "cancel", ours: r(200_000, O.cancel), foundation: r(200_000, F.cancel), dispatch: r(200_000, D.cancel), doubles: false),
    Workload(name: "priority", ours: r(100_000, O.priority), foundation: r(100_000, F.priority), dispatch: nil, doubles: false),
    Workload(name: "reprioritise", ours: r(20_000, O.reprioritise), foundation: r(20_000, F.reprioritise), dispatch: nil, doubles: true),
    Workload(name: "contended add", ours: r(200_000, O.contendedAdd), foundation: r(200_000, F.contendedAdd), dispatch: r(200_000, D.contendedAdd), doubles: false),
]

// Profile mode: run only this package's side of one workload, for perf or callgrind.
let asyncProfiles: [String: (Int) throws -> UInt64] = [
    "async-limit-4": AsyncWorkloads.queueLimited, "async-limiter": AsyncWorkloads.taskGroupLimiter,
    "async-batch-limit-4": AsyncWorkloads.queueLimitedBatch,
    "async-limit-4-from-thread": AsyncWorkloads.queueLimitedFromThread,
    "await-value": AsyncWorkloads.awaitValues, "then-chain": AsyncWorkloads.thenChain,
    "classic-subclass": { try AsyncWorkloads.classicSubclass($0) },
    "classic-subclass-foundation": { try AsyncWorkloads.foundationClassicSubclass($0) },
    "classic-subclass-default-qos": { try AsyncWorkloads.classicSubclass($0, quality: .default) },
    "classic-subclass-foundation-default-qos": { try AsyncWorkloads.foundationClassicSubclass($0, quality: .default) },
    "plain-batch": CompositionWorkloads.plain, "condition": CompositionWorkloads.conditioned,
    "one-category": { try CompositionWorkloads.categorised($0, categories: 1) },
    "64-categories": { try CompositionWorkloads.categorised($0, categories: 64) },
]
if let name = arguments.drop(while: { $0 != "--profile" }).dropFirst().first, let run = asyncProfiles[name] {
    for _ in 0..<rounds {
        let allocations = allocationCount()
        let elapsed = try run(100_000)
        let perOperation = Double(allocationCount() - allocations) / 100_000
        print("\(name): \(Double(elapsed) / 100_000) ns per operation, \(f(perOperation, 2)) allocations per operation")
    }
    exit(0)
}
if let name = arguments.drop(while: { $0 != "--profile" }).dropFirst().first {
    guard let workload = workloads.first(where: { $0.name == name }) else {
        print("unknown workload \(name)")
        exit(2)
    }
    for _ in 0..<rounds {
        let allocations = allocationCount()
        let elapsed = try workload.ours.run(workload.ours.n)
        let perOperation = Double(allocationCount() - allocations) / Double(workload.ours.n)
        print("\(name): \(Double(elapsed) / Double(workload.ours.n)) ns per operation, \(f(perOperation, 2)) allocations per operation")
    }
    exit(0)
}

/// Median ns per operation for each (implementation, N).
struct Result {
    var ours = 0.0, foundation = Double.nan, dispatch = Double.nan
    var oursGrowth = Double.nan, foundationGrowth = Double.nan
    /// Allocations per operation (medians over the rounds), counted by the interposed malloc.
    var oursAllocations = Double.nan, foundationAllocations = Double.nan, dispatchAllocations = Double.nan
}

/// Times one run into `samples`; returns its allocations per operation (every thread of
/// the process, from the first add to the end of the check).
@discardableResult
func measure(_ runner: Runner, n: Int, into samples: inout [Double], label: String = "") throws -> Double {
    let allocationsBefore = allocationCount(), switchesBefore = contextSwitches()
    let sample = Double(try runner.run(n)) / Double(n)
    let perOperation = Double(allocationCount() - allocationsBefore) / Double(n)
    let switches = contextSwitches()
    samples.append(sample)
    let voluntary = Double(switches.voluntary - switchesBefore.voluntary) / Double(n)
    let involuntary = Double(switches.involuntary - switchesBefore.involuntary) / Double(n)
    FileHandle.standardError.write("  \(label) n=\(n): \(Int(sample)) ns/op, \(f(perOperation, 2)) allocations/op, context switches/op \(f(voluntary, 3)) voluntary \(f(involuntary, 3)) involuntary, \(threadCount()) threads\n".data(using: .utf8)!)
    return perOperation
}

// `--only a,b`: only these workloads, interleaved as in the full run; prints each round.
let only = arguments.drop(while: { $0 != "--only" }).dropFirst().first.map { Set($0.split(separator: ",").map(String.init)) }

var results: [String: Result] = [:]
do {
    for workload in workloads where only?.contains(workload.name) ?? true {
        var ours: [Double] = [], foundation: [Double] = [], dispatch: [Double] = []
        var ours2: [Double] = [], foundation2: [Double] = []
        var oursAllocations: [Double] = [], foundationAllocations: [Double] = [], dispatchAllocations: [Double] = []
        for _ in 0..<rounds {
            oursAllocations.append(try measure(workload.ours, n: workload.ours.n, into: &ours, label: "\(workload.name) Operations"))
            if let runner = workload.foundation {
                foundationAllocations.append(try measure(runner, n: runner.n, into: &foundation, label: "\(workload.name) Foundation"))
            }
            if let runner = workload.dispatch {
                dispatchAllocations.append(try measure(runner, n: runner.n, into: &dispatch, label: "\(workload.name) Dispatch"))
            }
            if workload.doubles {
                try measure(workload.ours, n: workload.ours.n * 2, into: &ours2)
                if let runner = workload.foundation { try measure(runner, n: runner.n * 2, into: &foundation2) }
            }
        }
        var result = Result(ours: median(ours), foundation: median(foundation), dispatch: median(dispatch))
        result.oursAllocations = median(oursAllocations)
        result.foundationAllocations = median(foundationAllocations)
        result.dispatchAllocations = median(dispatchAllocations)
        if workload.doubles {
            // Total time at 2N over total time at N.
            result.oursGrowth = 2 * median(ours2) / result.ours
            result.foundationGrowth = 2 * median(foundation2) / result.foundation
        }
        results[workload.name] = result
        FileHandle.standardError.write("measured \(workload.name)\n".data(using: .utf8)!)
    }
} catch {
    print("CHECK FAILED: \(error)")
    exit(1)
}

if only != nil { exit(0) }

let memoryN = 500_000 / scale
func memory(_ which: String) -> Double {
    let output = (try? runChild(["--memory", which, "--n", "\(memoryN)"])) ?? ""
    return Double(output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? .nan
}
let oursMemory = memory("Operations")
let foundationMemory = memory("Foundation")

// MARK: Table

func f(_ value: Double, _ digits: Int = 0) -> String {
    value.isNaN ? "—" : String(format: "%.\(digits)f", value)
}

let tinyPerOp = results["tiny"]!.ours
nonisolated(unsafe) var failures: [String] = []
func target(_ name: String, _ met: Bool, _ text: String) -> String {
    if !met { failures.append("\(name): \(text)") }
    return (met ? "met: " : "MISSED: ") + text
}

print("")
print("Machine: \(ProcessInfo.processInfo.activeProcessorCount) cores, \(ProcessInfo.processInfo.operatingSystemVersionString); rounds: \(rounds), medians of ns per operation\(quick ? " (QUICK: small N, numbers not meaningful)" : "")")
print("")
print("| workload | N (ours / Foundation) | Operations | Foundation | Dispatch | Foundation ÷ Operations | Operations ÷ Dispatch | growth at 2N (ours / Foundation) | allocations per operation (ours / Foundation / Dispatch) | target |")
print("|---|---|---:|---:|---:|---:|---:|---|---|---|")
for workload in workloads {
    let result = results[workload.name]!
    let speedup = result.foundation / result.ours
    let versusDispatch = result.ours / result.dispatch
    let growth = workload.doubles ? "\(f(result.oursGrowth, 2)) / \(f(result.foundationGrowth, 2))" : "—"
    let text: String
    switch workload.name {
    case "tiny":
        text = target(workload.name, versusDispatch <= 1.3 && speedup >= 8, "≤ 1.3 × Dispatch (goal 1.0) and ≥ 8 × faster than Foundation")
    case "serial":
        text = target(workload.name, versusDispatch <= 1.3, "≤ 1.3 × serial DispatchQueue (goal 1.0)")
    case "chain":
        text = target(workload.name, result.oursGrowth <= 2.3 && result.ours <= 3 * tinyPerOp, "growth ≤ 2.3 and ≤ 3 × tiny (\(f(3 * tinyPerOp)) ns)")
    case "fanin", "fanout":
        text = target(workload.name, result.oursGrowth <= 2.3 && versusDispatch <= 1.5, "growth ≤ 2.3 and ≤ 1.5 × Dispatch (group notify / work item notify)")
    case "diamond":
        // Layers of 16, each operation depending on the 16 before it.
        let perEdge = result.ours / 16
        text = target(workload.name, result.oursGrowth <= 2.3 && perEdge <= 150, "growth ≤ 2.3 and ≤ 150 ns per edge, goal 100 (\(f(perEdge)) ns)")
    case "cancel":
        text = target(workload.name, speedup >= 5, "≥ 5 × faster than Foundation")
    case "reprioritise":
        text = target(workload.name, result.oursGrowth <= 2.3, "growth ≤ 2.3 (a change costs the same wherever the operation waits)")
    case "contended add":
        text = target(workload.name, speedup >= 4, "≥ 4 × faster than Foundation")
    default:
        text = "—"
    }
    let n = workload.foundation.map { "\(workload.ours.n) / \($0.n)" } ?? "\(workload.ours.n)"
    let allocations = "\(f(result.oursAllocations, 2)) / \(f(result.foundationAllocations, 2)) / \(f(result.dispatchAllocations, 2))"
    print("| \(workload.name) | \(n) | \(f(result.ours)) | \(f(result.foundation)) | \(f(result.dispatch)) | \(f(speedup, 1)) | \(f(versusDispatch, 2)) | \(growth) | \(allocations) | \(text) |")
}
let memoryText = target("pending memory", oursMemory <= 192, "≤ 192 bytes")
print("| pending memory (bytes per BlockOperation) | \(memoryN) | \(f(oursMemory)) | \(f(foundationMemory)) | — | \(f(foundationMemory / oursMemory, 1)) | — | — | — | \(memoryText) |")
print("")

// MARK: Async rows

/// Allocations per operation of the async rows (medians), by label.
nonisolated(unsafe) var asyncAllocations: [String: Double] = [:]

/// Median ns per operation of `run` at `n`, over the rounds.
func asyncMedian(_ label: String, _ n: Int, _ run: @escaping (Int) throws -> UInt64) throws -> Double {
    var samples: [Double] = [], allocations: [Double] = []
    for _ in 0..<rounds { allocations.append(try measure(Runner(n: n, run: run), n: n, into: &samples, label: label)) }
    asyncAllocations[label] = median(allocations)
    return median(samples)
}
let asyncN = max(100_000 / scale, 10)
let chainN = max(10_000 / scale, 10)
let suspendedN = max(20_000 / scale, 10)
do {
    let limited = try asyncMedian("async limit 4 Operations", asyncN, AsyncWorkloads.queueLimited)
    let limiter = try asyncMedian("async limit 4 TaskGroup limiter", asyncN, AsyncWorkloads.taskGroupLimiter)
    let batch = try asyncMedian("async limit 4 Operations, one batch", asyncN, AsyncWorkloads.queueLimitedBatch)
    let fromThread = try asyncMedian("async limit 4 Operations, added from a thread", asyncN, AsyncWorkloads.queueLimitedFromThread)
    let unlimited = try asyncMedian("async TaskGroup unlimited", asyncN, AsyncWorkloads.taskGroupUnlimited)
    let synchronous = try asyncMedian("sync limit 4 Operations", asyncN, AsyncWorkloads.queueLimitedSynchronous)
    let values = try asyncMedian("await value Operations", asyncN, AsyncWorkloads.awaitValues)
    let taskValues = try asyncMedian("await Task.value", asyncN, AsyncWorkloads.awaitTaskValues)
    let classic = try asyncMedian("classic subclass Operations", asyncN) { try AsyncWorkloads.classicSubclass($0) }
    let classicFoundation = try asyncMedian("classic subclass Foundation", asyncN) { try AsyncWorkloads.foundationClassicSubclass($0) }
    let classicDefault = try asyncMedian("classic subclass Operations, default QoS", asyncN) {
        try AsyncWorkloads.classicSubclass($0, quality: .default)
    }
    let classicFoundationDefault = try asyncMedian("classic subclass Foundation, default QoS", asyncN) {
        try AsyncWorkloads.foundationClassicSubclass($0, quality: .default)
    }
    let chain = try asyncMedian("then chain", chainN, AsyncWorkloads.thenChain)
    let chain2 = try asyncMedian("then chain 2N", chainN * 2, AsyncWorkloads.thenChain)
    func childMemory(_ which: String) -> Double {
        let output = (try? runChild(["--async-memory", which, "--n", "\(suspendedN)"])) ?? ""
        return Double(output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? .nan
    }
    let suspendedOurs = childMemory("operations"), suspendedTasks = childMemory("tasks")

    print("Async rows (same run; ns per operation, medians):")
    print("")
    print("| workload | N | Operations | TaskGroup + limiter | TaskGroup unlimited / Task | same work, synchronous operations | allocations per operation (Operations / limiter / unlimited or Task / synchronous) | target |")
    print("|---|---|---:|---:|---:|---:|---|---|")
    func a(_ label: String) -> String { f(asyncAllocations[label] ?? .nan, 2) }
    let limitText = target("async limit 4", limited <= 1.2 * limiter && limited <= 2 * synchronous,
        "≤ 1.2 × TaskGroup limiter (\(f(limited / limiter, 2)) ×) and ≤ 2 × synchronous (\(f(limited / synchronous, 2)) ×)")
    print("| async closures, limit 4 | \(asyncN) | \(f(limited)) | \(f(limiter)) | \(f(unlimited)) | \(f(synchronous)) | \(a("async limit 4 Operations")) / \(a("async limit 4 TaskGroup limiter")) / \(a("async TaskGroup unlimited")) / \(a("sync limit 4 Operations")) | \(limitText) |")
    let fromThreadText = target("async limit 4 from a thread", fromThread <= 1.2 * limiter, "≤ 1.2 × TaskGroup limiter (\(f(fromThread / limiter, 2)) ×)")
    print("| `AsyncBlockOperation`s added one at a time from a thread that then waits, quality of service unset, limit 4 | \(asyncN) | \(f(fromThread)) | \(f(limiter)) | — | — | \(a("async limit 4 Operations, added from a thread")) / \(a("async limit 4 TaskGroup limiter")) / — / — | \(fromThreadText) |")
    let batchText = target("async batch limit 4", batch <= 1.2 * limiter, "≤ 1.2 × TaskGroup limiter (\(f(batch / limiter, 2)) ×)")
    print("| `AsyncBlockOperation`s made first, added in one batch, limit 4 | \(asyncN) | \(f(batch)) | \(f(limiter)) | — | — | \(a("async limit 4 Operations, one batch")) / \(a("async limit 4 TaskGroup limiter")) / — / — | \(batchText) |")
    let classicSpeedup = classicFoundation / classic
    let limitedSpeedup = classicFoundation / limited
    print("| classic asynchronous subclass, limit 4 (Operations / Foundation) | \(asyncN) | \(f(classic)) | — | \(f(classicFoundation)) (Foundation) | — | \(a("classic subclass Operations")) / — / \(a("classic subclass Foundation")) / — | \(target("classic subclass", classicSpeedup >= 1.5, "≥ 1.5 × faster than on Foundation (\(f(classicSpeedup, 2)) ×)")) |")
    let classicDefaultSpeedup = classicFoundationDefault / classicDefault
    print("| the same, both queues at quality of service `.default` | \(asyncN) | \(f(classicDefault)) | — | \(f(classicFoundationDefault)) (Foundation) | — | \(a("classic subclass Operations, default QoS")) / — / \(a("classic subclass Foundation, default QoS")) / — | \(target("classic subclass, default QoS", classicDefaultSpeedup >= 1.5, "≥ 1.5 × faster than on Foundation (\(f(classicDefaultSpeedup, 2)) ×)")) |")
    print("| async closures against Foundation's classic subclass | \(asyncN) | \(f(limited)) | — | \(f(classicFoundation)) (Foundation) | — | — | \(target("async vs Foundation", limitedSpeedup >= 4, "≥ 4 × faster than Foundation's subclass (\(f(limitedSpeedup, 2)) ×)")) |")
    print("| await value (typed operations / tasks) | \(asyncN) | \(f(values)) | — | \(f(taskValues)) | — | \(a("await value Operations")) / — / \(a("await Task.value")) / — | — |")
    let growth = 2 * chain2 / chain
    print("| then chain | \(chainN) | \(f(chain)) | — | — | — | \(a("then chain")) / — / — / — | \(target("then chain", growth <= 2.3, "linear: growth at 2N ≤ 2.3 (\(f(growth, 2)))")) |")
    print("| memory per suspended async operation (bytes) | \(suspendedN) | \(f(suspendedOurs)) | — | \(f(suspendedTasks)) | — | — | — |")
    print("")
} catch {
    print("CHECK FAILED: \(error)")
    exit(1)
}

// MARK: Composition rows

let groupN = max(10_000 / scale, 10)
let exclusivityN = max(5_000 / scale, 10)
let conditionN = max(20_000 / scale, 10)
do {
    let group = try asyncMedian("group of N children", groupN, CompositionWorkloads.group)
    let plain = try asyncMedian("N operations, plain queue", groupN, CompositionWorkloads.plain)
    let exclusive = try asyncMedian("exclusivity 2 categories, 8 queues", exclusivityN, CompositionWorkloads.exclusivity)
    let conditioned = try asyncMedian("one condition per operation", conditionN, CompositionWorkloads.conditioned)
    let unconditioned = try asyncMedian("no condition", conditionN, CompositionWorkloads.plain)
    let oneCategory = try asyncMedian("one category", conditionN) { try CompositionWorkloads.categorised($0, categories: 1) }
    let manyCategories = try asyncMedian("64 categories", conditionN) { try CompositionWorkloads.categorised($0, categories: 64) }
    print("Composition rows (same run; ns per operation, medians):")
    print("")
    print("| workload | N | ns per operation | compared with | ns per operation |")
    print("|---|---|---:|---|---:|")
    print("| group of N children | \(groupN) | \(f(group)) | N operations on a plain queue | \(f(plain)) |")
    print("| exclusivity: 2 categories, 8 queues | \(exclusivityN) | \(f(exclusive)) | — | — |")
    print("| one condition per operation | \(conditionN) | \(f(conditioned)) | no condition (overhead \(f(conditioned - unconditioned)) ns) | \(f(unconditioned)) |")
    print("")
    print("| each operation has (one batch, default queue) | N | ns per operation | × a plain operation | target |")
    print("|---|---|---:|---:|---|")
    let conditionRatio = conditioned / unconditioned, oneRatio = oneCategory / unconditioned, manyRatio = manyCategories / unconditioned
    print("| nothing | \(conditionN) | \(f(unconditioned)) | 1.00 | — |")
    print("| one BlockCondition that holds | \(conditionN) | \(f(conditioned)) | \(f(conditionRatio, 2)) | \(target("condition", conditionRatio <= 2, "≤ 2 ×")) |")
    print("| addExclusivity(\"one\") | \(conditionN) | \(f(oneCategory)) | \(f(oneRatio, 2)) | \(target("one category", oneRatio <= 3, "≤ 3 ×")) |")
    print("| addExclusivity(\"k\\(i % 64)\") | \(conditionN) | \(f(manyCategories)) | \(f(manyRatio, 2)) | \(target("64 categories", manyRatio <= 3, "≤ 3 ×")) |")
    print("")
} catch {
    print("CHECK FAILED: \(error)")
    exit(1)
}

print("All self-checks passed (nothing lost, dependency order, FIFO, priority order, cancelled operations not run).")
if !failures.isEmpty {
    print("Targets missed: \(failures.count): " + failures.joined(separator: "; "))
}
