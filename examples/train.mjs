// Fit y = sin(3x) on [-1, 1] with a small MLP (fc.nn.Linear + tanh) and Adam: the loss falls.
import { init } from "fucina";

const fc = await init();
const x = fc.uniform(["sample", "in"], [256, 1], -1, 1, /* seed */ 1);
const y = x.scale(3).sin().withTags(["sample", "out"]);
const hidden = new fc.nn.Linear("in", "hidden", 1, 32, /* seed */ 2);
const head = new fc.nn.Linear("hidden", "out", 32, 1, /* seed */ 3);
const opt = fc.optim.adam([...hidden.parameters(), ...head.parameters()], { lr: 0.01 });
for (let step = 0; step <= 500; ++step) {
  const loss = fc.scope(() => {
    opt.zeroGrad();
    const mse = head.forward(hidden.forward(x).tanh()).mseLoss(y);
    mse.backward();
    opt.step();
    return mse.item();
  });
  if (step % 100 === 0) console.log(`step ${step}: loss ${loss.toFixed(4)}`);
}
