"""Head movement: eased motion, a bounded command rate, and torque off when idle.

The SCS0009 serial bus locks up under a sustained command rate, so at most one
command per axis per `min_interval_ms`, only when the angle changed by a whole
degree, and the servos go limp after `idle_ms` without movement (quiet, cool,
and the bus rests). `send(axis_name, degrees)` and `torque(on)` are the HAL's.
"""


def ease_in_out(t):
    """Cubic ease: slow start, slow end; t in 0..1."""
    if t <= 0:
        return 0.0
    if t >= 1:
        return 1.0
    if t < 0.5:
        return 4 * t * t * t
    t = 2 * t - 2
    return 0.5 * t * t * t + 1


class Axis:
    def __init__(self, name, low, high, home):
        self.name = name
        self.low = low
        self.high = high
        self.home = home
        self.start = home
        self.target = home
        self.start_ms = 0
        self.duration_ms = 1
        self.sent = None  # the last whole degree commanded

    def clamp(self, degrees):
        return max(self.low, min(self.high, degrees))

    def move(self, degrees, now_ms, duration_ms):
        self.start = self.position(now_ms)
        self.target = self.clamp(degrees)
        self.start_ms = now_ms
        self.duration_ms = max(1, duration_ms)

    def position(self, now_ms):
        t = (now_ms - self.start_ms) / self.duration_ms
        return self.start + (self.target - self.start) * ease_in_out(t)

    def moving(self, now_ms):
        return now_ms - self.start_ms < self.duration_ms


# Head gestures per expression: (axis, offset from home in degrees, duration ms) steps.
GESTURES = {
    "happy": (("pitch", -8, 250), ("pitch", 4, 250), ("pitch", -6, 250), ("pitch", 0, 300)),
    "sad": (("pitch", 12, 900), ("yaw", -6, 700)),
    "angry": (("yaw", -10, 150), ("yaw", 10, 200), ("yaw", -8, 200), ("yaw", 0, 200)),
    "sleepy": (("pitch", 15, 1500),),
    "doubtful": (("yaw", 12, 500), ("pitch", -4, 400)),
    "neutral": (("yaw", 0, 500), ("pitch", 0, 500)),
}


class Head:
    def __init__(self, axes, send, torque, min_interval_ms=100, idle_ms=3000):
        self.axes = {}
        for axis in axes:
            self.axes[axis.name] = axis
        self.send = send
        self.torque = torque
        self.min_interval_ms = min_interval_ms
        self.idle_ms = idle_ms
        self.steps = []
        self.step_until = 0
        self.last_sent_ms = -min_interval_ms
        self.last_motion_ms = 0
        self.torque_on = False
        self.commands = 0

    def gesture(self, expression, now_ms):
        """Queue the head movement fitting `expression` (replacing one in progress)."""
        self.steps = list(GESTURES.get(expression, GESTURES["neutral"]))
        self.step_until = now_ms

    def tick(self, now_ms):
        """Advance the motion; call it often (every animation frame is fine)."""
        if self.steps and now_ms >= self.step_until:
            name, offset, duration = self.steps.pop(0)
            axis = self.axes.get(name)
            if axis:
                axis.move(axis.home + offset, now_ms, duration)
            self.step_until = now_ms + duration
        moving = bool(self.steps)
        for axis in self.axes.values():
            if axis.moving(now_ms):
                moving = True
        if moving:
            self.last_motion_ms = now_ms
        if now_ms - self.last_sent_ms >= self.min_interval_ms:
            for axis in self.axes.values():
                degrees = int(round(axis.position(now_ms)))
                if degrees != axis.sent:
                    if not self.torque_on:
                        self.torque(True)
                        self.torque_on = True
                    self.send(axis.name, degrees)
                    axis.sent = degrees
                    self.last_sent_ms = now_ms
                    self.commands += 1
        if self.torque_on and not moving and now_ms - self.last_motion_ms >= self.idle_ms:
            self.torque(False)
            self.torque_on = False
