/**
 * Collects items into batches for a batched operation (one statement, one hand-over to the
 * network): items pushed in one turn of the event loop go together, at most `maxInFlight`
 * batches run at once, and what arrives meanwhile waits for the next batch, so batches grow
 * with the load and a lone item still goes at once.
 */
export class BatchPump<T> {
  private pending: T[] = [];
  private scheduled = false;
  private readonly running = new Set<Promise<void>>();

  /** `run` handles its own failures: a rejection is only logged by the caller's code, never here. */
  constructor(
    private readonly run: (batch: T[]) => Promise<void>,
    private readonly options: {
      maxInFlight: number;
      /** The most a batch may hold, counted by `sizeOf` (default: 1 per item); an item larger than that goes alone. */
      maxBatch: number;
      sizeOf?: (item: T) => number;
    },
  ) {}

  push(...items: T[]): void {
    this.pending.push(...items);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  /** Resolves once nothing is waiting or running. */
  async drain(): Promise<void> {
    while (this.running.size > 0 || this.pending.length > 0 || this.scheduled) {
      if (this.running.size > 0) await Promise.all([...this.running]);
      else await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /** How many waiting items the next batch takes: at least one, and no more than maxBatch in size. */
  private takeCount(): number {
    const { maxBatch, sizeOf } = this.options;
    if (!sizeOf) return maxBatch;
    let size = 0;
    let count = 0;
    for (const item of this.pending) {
      size += sizeOf(item);
      if (count > 0 && size > maxBatch) break;
      count++;
    }
    return count;
  }

  private pump(): void {
    while (this.running.size < this.options.maxInFlight && this.pending.length > 0) {
      const batch = this.pending.splice(0, this.takeCount());
      const task: Promise<void> = this.run(batch).finally(() => {
        this.running.delete(task);
        this.pump();
      });
      this.running.add(task);
    }
  }
}

/**
 * A call batched through a BatchPump: the calls made together go to `run` as one list of inputs,
 * and each gets the output at its own index; if `run` fails, every call of its batch fails.
 */
export class BatchedCall<I, O> {
  private readonly pump: BatchPump<{ input: I; resolve(output: O): void; reject(error: unknown): void }>;

  constructor(
    run: (inputs: I[]) => Promise<O[]>,
    options: { maxInFlight: number; maxBatch: number; sizeOf?: (input: I) => number },
  ) {
    const { sizeOf } = options;
    this.pump = new BatchPump(
      async (batch) => {
        try {
          const outputs = await run(batch.map((call) => call.input));
          batch.forEach((call, index) => call.resolve(outputs[index]!));
        } catch (error) {
          for (const call of batch) call.reject(error);
        }
      },
      { maxInFlight: options.maxInFlight, maxBatch: options.maxBatch, sizeOf: sizeOf && ((call) => sizeOf(call.input)) },
    );
  }

  call(input: I): Promise<O> {
    return new Promise((resolve, reject) => this.pump.push({ input, resolve, reject }));
  }

  /** Resolves once no call is waiting or running. */
  drain(): Promise<void> {
    return this.pump.drain();
  }
}
