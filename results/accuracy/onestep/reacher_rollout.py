import numpy as np, minari, gymnasium as gym, sys, jax, time
sys.path.insert(0,'examples')
from reacher import policy
from resolvent.algorithms import onestep
arr=np.load('/work/q/runs/reacher-policy/models/favor.npz')
m0=onestep.from_arrays(arr)
ds = minari.load_dataset('examples/reacher-jt-v0')
F={'obs':[],'action':[],'next_obs':[]}
for ep in ds.iterate_episodes():
    F['obs'].append(ep.observations[:-1]); F['action'].append(ep.actions); F['next_obs'].append(ep.observations[1:])
F={k:np.concatenate(v).astype(np.float32) for k,v in F.items()}
x=np.concatenate([F['obs'],F['action']],1); xm,xs=x.mean(0),x.std(0)+1e-6
env=gym.make('Reacher-v5').unwrapped
S0=[];T=[]
for k in range(32):
    o,_=env.reset(seed=500+k); S0.append(o); tr=[o]
    for t in range(100):
        o,*_=env.step(policy(o[None])[0]); tr.append(o)
    T.append(tr)
T=np.array(T) # (32,101,10)
def roll(m):
    s=np.array(S0,np.float32); out=[s]
    for t in range(100):
        p=onestep.predict(m,s,policy(s)); s=np.clip(np.asarray(p['next_obs']),m.low,m.high); out.append(s)
    return np.stack(out,1)
def report(name,m):
    R=roll(m)
    for t in [1,5,20,50,100]:
        e=np.sqrt(((R[:,t]-T[:,t])**2).mean(0))
        print(name,'t',t,'rmse qdot %.3f  tip-target %.3f  cos/sin %.3f'%(e[6:8].mean(),e[8:10].mean(),e[:4].mean()))
    sp=(R[:,50:,6:8]**2).sum(-1).mean(); print(name,'mean speed2 t>=50 model %.3f true %.3f'%(sp,(T[:,50:,6:8]**2).sum(-1).mean()))
report('saved',m0)
for steps in [3000, 20000]:
  for hid in [(256,256)]:
    t0=time.time()
    m=onestep.fit(onestep.OneStepConfig(hidden=hid,steps=steps),jax.random.PRNGKey(0),F,xm,xs)
    report(f'fit{steps}',m); print('time',time.time()-t0)
