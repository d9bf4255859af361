-- Argo CD health check for vmobs' VMObservation
-- (observability.vmobs.io/v1alpha1). vmobs already folds a KubeVirt VM's
-- control plane, node and guest into one verdict, in Argo CD's own words,
-- so this script only checks that the verdict is current and maps it:
--   Healthy, Progressing, Suspended, Degraded, Unknown: the same word;
--   Failed (a terminal state): Degraded.
-- It uses only Lua's base library, so it runs as an argocd-cm
-- customization, where Argo CD opens no other.
local hs = {}

local generation = nil
if obj.metadata ~= nil then
  generation = obj.metadata.generation
end

if obj.status == nil then
  hs.status = "Progressing"
  if generation ~= nil then
    hs.message = "Waiting for vmobs to observe generation " .. tostring(generation)
  else
    hs.message = "Waiting for vmobs to observe the VM"
  end
  return hs
end

-- observedGeneration is set on every status write; a status older than
-- the spec (say, a policy edited in Git) says nothing about the new spec.
local observed = obj.status.observedGeneration
if observed == nil then
  observed = 0
end
if generation ~= nil and observed < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for vmobs to observe generation " .. tostring(generation)
  return hs
end

local verdict = obj.status.verdict
local message = obj.status.message
if message == nil or message == "" then
  message = obj.status.reason
end
if message == nil or message == "" then
  message = verdict
end

if verdict == nil or verdict == "" then
  hs.status = "Progressing"
  hs.message = "Waiting for vmobs to reach a verdict"
elseif verdict == "Healthy" or verdict == "Progressing" or verdict == "Suspended" or verdict == "Degraded" or verdict == "Unknown" then
  hs.status = verdict
  hs.message = message
elseif verdict == "Failed" then
  hs.status = "Degraded"
  hs.message = message
else
  hs.status = "Unknown"
  hs.message = "Unrecognized verdict " .. tostring(verdict) .. ": " .. tostring(message)
end
return hs
